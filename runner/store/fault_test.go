package store

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// failing injects err into every operation of kind on a file whose name
// ends in suffix, once switched On.
func failing(suffix string, err error, kinds ...errorfs.OpKind) *errorfs.Toggle {
	return &errorfs.Toggle{Injector: errorfs.InjectorFunc(func(op errorfs.Op) error {
		for _, k := range kinds {
			if op.Kind == k && strings.HasSuffix(op.Path, suffix) {
				return fmt.Errorf("injected: %w", err)
			}
		}
		return nil
	})}
}

func openOn(t *testing.T, fs vfs.FS, opts ...Option) *Store {
	t.Helper()
	s, err := Open("/state", nil, append([]Option{WithFS(fs)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func commit(s *Store, key string, sync bool) error {
	b := s.NewBatch()
	b.Set([]byte(key), []byte("v"))
	return b.Commit(sync)
}

// TestSpillRefusedOnFullDisk: a Space write that would leave less than
// the reserve free fails with ENOSPC, naming the state dir, before Pebble
// ever meets a full disk; job records still go into the reserve, and
// spilling works again once there is room.
func TestSpillRefusedOnFullDisk(t *testing.T) {
	fs := vfs.NewMem()
	s := openOn(t, fs, WithReserve(64<<20))
	defer s.Close()
	sp := s.Scratch("job").Space("spill/")
	fs.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: 10 << 20, TotalBytes: 1 << 30, UsedBytes: 1<<30 - 10<<20})
	err := sp.WriteRun([][]byte{[]byte("k")}, [][]byte{[]byte("v")})
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "/state") || !strings.Contains(err.Error(), "10 MiB free") {
		t.Fatalf("spill on a full disk: err = %v, want ENOSPC naming the state dir and the free space", err)
	}
	if err := commit(s, "jobs/a", true); err != nil {
		t.Fatalf("a job record on a full disk: %v", err)
	}
	fs.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: 512 << 20, TotalBytes: 1 << 30, UsedBytes: 512 << 20})
	if err := sp.WriteRun([][]byte{[]byte("k")}, [][]byte{[]byte("v")}); err != nil {
		t.Fatalf("spill with room again: %v", err)
	}
}

// TestSpillWriteFault: the disk refuses a write of the spill's data
// (ENOSPC, as when it fills between two free-space readings). Pebble
// writes it in a background flush, so a later spill write is the first
// to fail; it names the cause and the file, and every later Space
// operation fails the same way. The job records are apart: they are
// still written and read.
func TestSpillWriteFault(t *testing.T) {
	tog := failing(".sst", syscall.ENOSPC, errorfs.OpFileWrite)
	s := openOn(t, errorfs.Wrap(vfs.NewMem(), tog))
	defer s.Close()
	sp := s.Scratch("job").Space("spill/")
	tog.On()
	var err error
	value := make([]byte, 64<<10)
	for i := 0; err == nil && i < 10000; i++ { // 640 MiB: many flushes
		err = sp.WriteRun([][]byte{fmt.Appendf(nil, "%08d", i)}, [][]byte{value})
	}
	if !errors.Is(err, syscall.ENOSPC) || !errors.Is(err, ErrDiskFault) || !strings.Contains(err.Error(), "/state/scratch/") {
		t.Fatalf("spill after a failed flush: err = %v, want a disk fault naming ENOSPC and the scratch file", err)
	}
	if err := sp.Scan(nil, func(k, v []byte) error { return nil }); !errors.Is(err, ErrDiskFault) {
		t.Fatalf("reading the spill after the fault: err = %v, want the fault", err)
	}
	if err := commit(s, "jobs/b", true); err != nil {
		t.Fatalf("a job record after a spill fault: %v", err)
	}
	if _, ok, err := s.Get([]byte("jobs/b")); !ok || err != nil {
		t.Fatalf("reading a record after the fault: %v, %v", ok, err)
	}
}

// TestRecordWriteFault: the disk refuses a write of the records' log.
// Pebble writes it in the background and reports it to the next synced
// commit (as a fatal error, which the store returns); every write after
// is refused with the cause instead of reaching Pebble, and reads work.
func TestRecordWriteFault(t *testing.T) {
	tog := failing(".log", syscall.ENOSPC, errorfs.OpFileWrite)
	s := openOn(t, errorfs.Wrap(vfs.NewMem(), tog))
	defer s.Close()
	if err := commit(s, "jobs/a", true); err != nil {
		t.Fatal(err)
	}
	tog.On()
	err := commit(s, "jobs/b", true)
	if !errors.Is(err, syscall.ENOSPC) || !errors.Is(err, ErrDiskFault) || !strings.Contains(err.Error(), "/state/000002.log") {
		t.Fatalf("a record whose log write failed: err = %v, want a disk fault naming ENOSPC and the log file", err)
	}
	if err := commit(s, "jobs/c", false); !errors.Is(err, ErrDiskFault) {
		t.Fatalf("a record after the fault: err = %v, want the disk fault", err)
	}
	if _, ok, err := s.Get([]byte("jobs/a")); !ok || err != nil {
		t.Fatalf("reading after the fault: %v, %v", ok, err)
	}
}

// TestSyncFault: a synced commit whose fsync fails returns the failure
// (Pebble would end the process) and the store takes no more writes.
func TestSyncFault(t *testing.T) {
	tog := failing(".log", syscall.EIO, errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo)
	s := openOn(t, errorfs.Wrap(vfs.NewMem(), tog))
	defer s.Close()
	tog.On()
	err := commit(s, "jobs/a", true)
	if !errors.Is(err, syscall.EIO) || !errors.Is(err, ErrDiskFault) || !strings.Contains(err.Error(), "sync") {
		t.Fatalf("a commit whose sync failed: err = %v, want the sync's EIO", err)
	}
	tog.Off()
	if err := commit(s, "jobs/b", false); !errors.Is(err, ErrDiskFault) {
		t.Fatalf("a write after the fault: err = %v, want it refused", err)
	}
}

// TestDamagedStoreRefused damages one file of a store at a time: Open
// refuses the store and its error names the file.
func TestDamagedStoreRefused(t *testing.T) {
	build := func() (*vfs.MemFS, map[string]string) {
		fs := vfs.NewMem()
		s := openOn(t, fs)
		for i := range 200 {
			if err := commit(s, fmt.Sprintf("jobs/%03d", i), false); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.db.Flush(); err != nil {
			t.Fatal(err)
		}
		s.Close()
		names, _ := fs.List("/state")
		kind := map[string]string{}
		for _, n := range names {
			switch {
			case strings.HasSuffix(n, ".sst"):
				kind["sst"] = n
			case strings.HasPrefix(n, "MANIFEST-"):
				kind["manifest"] = n
			}
		}
		return fs, kind
	}
	for _, tc := range []struct{ file, damage string }{
		{"sst", "flip"}, {"sst", "truncate"}, {"sst", "remove"}, {"manifest", "remove"},
	} {
		fs, files := build()
		name := files[tc.file]
		if name == "" {
			t.Fatalf("the store has no %s file", tc.file)
		}
		damage(t, fs, "/state/"+name, tc.damage)
		_, err := Open("/state", nil, WithFS(fs))
		t.Log(err)
		if err == nil || !strings.Contains(err.Error(), strings.TrimSuffix(name, ".sst")) || !strings.Contains(err.Error(), "state dir /state") {
			t.Errorf("%s %s: Open = %v, want a refusal naming %s", tc.damage, name, err, name)
		}
	}
}

// damage flips a byte in the middle of path, cuts it in half or removes it.
func damage(t *testing.T, fs vfs.FS, path, how string) {
	t.Helper()
	f, err := fs.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.Stat()
	data := make([]byte, st.Size())
	if _, err := f.ReadAt(data, 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := fs.Remove(path); err != nil || how == "remove" {
		return
	}
	if how == "flip" {
		data[len(data)/3] ^= 0xff
	} else {
		data = data[:len(data)/2]
	}
	w, err := fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(data)
	w.Sync()
	w.Close()
}
