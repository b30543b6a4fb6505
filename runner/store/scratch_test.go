package store

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/beam-runner/beam-runner/testsupport/testwait"
)

// incompressible is n random bytes: Pebble compresses its blocks, and
// what a test measures on disk must be there.
func incompressible(n int) []byte {
	b := make([]byte, n)
	rand.NewChaCha8([32]byte{7}).Read(b)
	return b
}

// spill writes n runs of 64 KiB values to sp, failing the test on error.
func spill(t *testing.T, sp *Space, n int) {
	t.Helper()
	value := incompressible(64 << 10)
	for i := range n {
		value[0] = byte(i)
		if err := sp.WriteRun([][]byte{fmt.Appendf(nil, "%08d", i)}, [][]byte{value}); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
	}
}

func usage(t *testing.T, s *Store) Usage {
	t.Helper()
	u, err := s.Usage()
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestScratchRemovedWhole: a job's spill takes disk space while it runs
// and gives all of it back at Remove, on a real file system; a Scratch
// beside it keeps its data, and the removed one's Spaces refuse work
// naming their owner.
func TestScratchRemovedWhole(t *testing.T) {
	s := open(t, t.TempDir())
	defer s.Close()
	a, b := s.Scratch("job-a"), s.Scratch("job-b")
	spill(t, a.Space("gbk/"), 512) // 32 MiB: several flushes to disk
	spill(t, b.Space("gbk/"), 16)
	sa, err := a.Size()
	during := usage(t, s).Scratch
	// A background compaction writes its output before it deletes its
	// inputs, so two reads a moment apart may differ by up to a copy:
	// Usage must count job-a's scratch, not match it to the byte.
	if err != nil || sa < 16<<20 || during < sa/2 {
		t.Fatalf("job-a's Size %d (%v) after spilling 32 MiB; the store's scratch holds %d", sa, err, during)
	}
	if during < 16<<20 {
		t.Fatalf("scratch holds %d bytes while spilling 32 MiB; want the spill on disk", during)
	}
	if err := a.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(a.Dir()); !os.IsNotExist(err) {
		t.Fatalf("%s after Remove: %v, want it gone", a.Dir(), err)
	}
	if after := usage(t, s).Scratch; after > 4<<20 {
		t.Fatalf("scratch holds %d bytes after removing the 32 MiB spill (%d before); want it given back", after, during)
	}
	n := 0
	if err := b.Space("gbk/").Scan(nil, func(k, v []byte) error { n++; return nil }); err != nil || n != 16 {
		t.Fatalf("the other job's spill after the removal: %d runs, %v; want its 16", n, err)
	}
	err = a.Space("gbk/").WriteRun([][]byte{[]byte("k")}, [][]byte{[]byte("v")})
	if !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "job-a") {
		t.Fatalf("writing to a removed scratch: err = %v, want ErrClosed naming job-a", err)
	}
	if err := a.Space("gbk/").Scan(nil, func(k, v []byte) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Fatalf("reading a removed scratch: err = %v, want ErrClosed", err)
	}
	if err := a.Remove(); err != nil {
		t.Fatalf("removing twice: %v", err)
	}
}

// TestScratchUntouched: a Scratch nothing was written to has no directory;
// reading and deleting in it find nothing.
func TestScratchUntouched(t *testing.T) {
	s := open(t, t.TempDir())
	defer s.Close()
	x := s.Scratch("idle")
	sp := x.Space("p/")
	if err := sp.Scan(nil, func(k, v []byte) error { t.Errorf("found %q", k); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := sp.DeletePrefix(nil); err != nil {
		t.Fatal(err)
	}
	if n, err := x.Size(); n != 0 || err != nil {
		t.Fatalf("Size of an unused scratch: %d, %v; want 0", n, err)
	}
	if _, err := os.Stat(x.Dir()); !os.IsNotExist(err) {
		t.Fatalf("%s of an unused scratch: %v, want none", x.Dir(), err)
	}
	if err := x.Remove(); err != nil {
		t.Fatal(err)
	}
}

// TestScratchDirNames: owners' names become distinct, safe directory
// names under the scratch dir, even when two owners share a name.
func TestScratchDirNames(t *testing.T) {
	s := open(t, t.TempDir())
	defer s.Close()
	root := filepath.Join(s.Dir(), scratchDir)
	seen := map[string]bool{}
	for _, owner := range []string{"job", "job", "../../etc", strings.Repeat("x", 200)} {
		dir := s.Scratch(owner).Dir()
		if filepath.Dir(dir) != root || seen[dir] || len(filepath.Base(dir)) > 80 {
			t.Errorf("owner %.20q: dir %s, want a new one directly under %s", owner, dir, root)
		}
		seen[dir] = true
	}
}

// TestCloseRemovesScratch: Close removes the Scratches still open, and
// Open removes what a killed server's Scratches left.
func TestCloseRemovesScratch(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	spill(t, s.Scratch("left").Space("p/"), 8)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if u := scratchFiles(t, dir); len(u) > 0 {
		t.Fatalf("after Close the scratch dir holds %v", u)
	}
	stale := filepath.Join(dir, scratchDir, "7-killed", "000004.sst")
	if err := os.MkdirAll(filepath.Dir(stale), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stale, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir)
	defer s.Close()
	if u := usage(t, s); u.Scratch != 0 {
		t.Fatalf("a reopened store's scratch holds %d bytes (%v), want none", u.Scratch, scratchFiles(t, dir))
	}
}

// TestSharedSpace: the store's own Spaces share one Scratch, so what one
// writes another reads, and Close removes it.
func TestSharedSpace(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	spill(t, s.Space("a/"), 3)
	n := 0
	if err := s.Space("a/").Scan(nil, func(k, v []byte) error { n++; return nil }); err != nil || n != 3 {
		t.Fatalf("reading the shared space back: %d runs, %v; want 3", n, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if files := scratchFiles(t, dir); len(files) > 0 {
		t.Fatalf("after Close the scratch dir holds %v", files)
	}
}

// TestScratchAfterClose: a job that asks for a scratch after the store
// closed gets one that refuses writes, and nothing is made on disk.
func TestScratchAfterClose(t *testing.T) {
	s := open(t, t.TempDir())
	s.Close()
	x := s.Scratch("late")
	if err := x.Space("p/").WriteRun([][]byte{[]byte("k")}, [][]byte{[]byte("v")}); !errors.Is(err, ErrClosed) {
		t.Fatalf("writing after Close: err = %v, want ErrClosed", err)
	}
	if _, err := os.Stat(x.Dir()); !os.IsNotExist(err) {
		t.Fatalf("%s after Close: %v, want nothing made", x.Dir(), err)
	}
}

func scratchFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	filepath.WalkDir(filepath.Join(dir, scratchDir), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	return files
}

// TestReclaimGivesBackSpace: a deleted prefix's space is back soon after
// Reclaim returns, without a restart; the keys beside it stay.
func TestReclaimGivesBackSpace(t *testing.T) {
	s := open(t, t.TempDir())
	defer s.Close()
	value := incompressible(1 << 20)
	for i := range 64 {
		b := s.NewBatch()
		value[0] = byte(i)
		b.Set(fmt.Appendf(nil, "jobs/a/k/%03d", i), value)
		b.Set(fmt.Appendf(nil, "jobs/b/h%03d", i), []byte("header"))
		if err := b.Commit(true); err != nil {
			t.Fatal(err)
		}
	}
	before := usage(t, s).Jobs
	b := s.NewBatch()
	b.DeletePrefix([]byte("jobs/a/k/"))
	if err := b.Commit(true); err != nil {
		t.Fatal(err)
	}
	if err := s.Reclaim([]byte("jobs/a/k/")); err != nil {
		t.Fatal(err)
	}
	// Pebble deletes the files a compaction made obsolete in the
	// background; what it keeps besides is a few recycled logs.
	if before < 32<<20 {
		t.Fatalf("job store: %d bytes with 64 MiB of checkpoints; want at least 32 MiB", before)
	}
	testwait.NoErr(t, 30*time.Second, "the reclaimed space to be given back", func() error {
		if after := usage(t, s).Jobs; after > 16<<20 {
			return fmt.Errorf("job store: %d bytes with 64 MiB of checkpoints, %d after deleting and reclaiming them", before, after)
		}
		return nil
	})
	if got := scanAll(t, s, "jobs/b/h000"); got != "jobs/b/h000=header" {
		t.Fatalf("a record beside the reclaimed range: %q", got)
	}
	s.Close()
	if err := s.Reclaim([]byte("jobs/")); err != ErrClosed {
		t.Fatalf("Reclaim after Close = %v, want ErrClosed", err)
	}
}

// TestScratchFaultStaysWithItsJob: a disk fault in one job's spill (its
// flushed files refused) fails that job's spill, naming the cause and its
// directory; another job's spill goes on, and the faulted one's Remove
// still frees its directory.
func TestScratchFaultStaysWithItsJob(t *testing.T) {
	mem := vfs.NewMem()
	tog := &errorfs.Toggle{Injector: errorfs.InjectorFunc(func(op errorfs.Op) error {
		if op.Kind == errorfs.OpFileWrite && strings.Contains(op.Path, "-bad/") && strings.HasSuffix(op.Path, ".sst") {
			return fmt.Errorf("injected: %w", syscall.EIO)
		}
		return nil
	})}
	s := openOn(t, errorfs.Wrap(mem, tog))
	defer s.Close()
	bad, good := s.Scratch("bad"), s.Scratch("good")
	tog.On()
	var err error
	value := make([]byte, 64<<10)
	for i := 0; err == nil && i < 10000; i++ {
		err = bad.Space("p/").WriteRun([][]byte{fmt.Appendf(nil, "%08d", i)}, [][]byte{value})
	}
	if !errors.Is(err, syscall.EIO) || !errors.Is(err, ErrDiskFault) || !strings.Contains(err.Error(), "bad") {
		t.Fatalf("spill after a failed flush: err = %v, want a disk fault naming EIO and the job", err)
	}
	spill(t, good.Space("p/"), 256) // 16 MiB, flushed
	n := 0
	if err := good.Space("p/").Scan(nil, func(k, v []byte) error { n++; return nil }); err != nil || n != 256 {
		t.Fatalf("the other job's spill: %d runs, %v", n, err)
	}
	if err := bad.Remove(); err != nil {
		t.Fatalf("removing the faulted spill: %v", err)
	}
	if _, err := mem.Stat(bad.Dir()); err == nil {
		t.Fatalf("%s still there after Remove", bad.Dir())
	}
}

// TestScratchRemoveFault: a directory the disk will not remove is
// Remove's error, naming the job and the directory; its Spaces are
// refused all the same.
func TestScratchRemoveFault(t *testing.T) {
	tog := failing("-stuck", syscall.EIO, errorfs.OpRemoveAll)
	s := openOn(t, errorfs.Wrap(vfs.NewMem(), tog))
	x := s.Scratch("stuck")
	spill(t, x.Space("p/"), 4)
	tog.On()
	err := x.Remove()
	if !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), "stuck") || !strings.Contains(err.Error(), x.Dir()) {
		t.Fatalf("Remove on a failing disk: err = %v, want EIO naming the job and %s", err, x.Dir())
	}
	if err := x.Space("p/").WriteRun([][]byte{[]byte("k")}, [][]byte{[]byte("v")}); !errors.Is(err, ErrClosed) {
		t.Fatalf("writing after a failed Remove: err = %v, want ErrClosed", err)
	}
	tog.Off()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestScratchOpenFault: a scratch whose directory cannot be made fails
// its first write naming the job and the directory; the job records go
// on.
func TestScratchOpenFault(t *testing.T) {
	tog := failing("-nodir", syscall.EACCES, errorfs.OpMkdirAll)
	s := openOn(t, errorfs.Wrap(vfs.NewMem(), tog))
	defer s.Close()
	tog.On()
	x := s.Scratch("nodir")
	err := x.Space("p/").WriteRun([][]byte{[]byte("k")}, [][]byte{[]byte("v")})
	if !errors.Is(err, syscall.EACCES) || !strings.Contains(err.Error(), "nodir") || !strings.Contains(err.Error(), x.Dir()) {
		t.Fatalf("spill with no directory: err = %v, want EACCES naming the job and %s", err, x.Dir())
	}
	if err := commit(s, "jobs/x", true); err != nil {
		t.Fatalf("a job record after the spill failed to open: %v", err)
	}
}
