package store

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/beam-runner/beam-runner/testsupport/diskstall"
	"github.com/beam-runner/beam-runner/testsupport/testwait"
)

func scratchWrites(op errorfs.Op) bool {
	return diskstall.Writes(op) && strings.Contains(op.Path, "/"+scratchDir+"/")
}

func scanQueued(t *testing.T, sp *QueuedSpace, prefix string) string {
	t.Helper()
	var out []string
	err := sp.Scan([]byte(prefix), func(k, v []byte) error {
		out = append(out, string(k)+"="+string(v))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(out, " ")
}

// scanQueuedFrom is scanQueued from the first key at or after from ("":
// the prefix's first).
func scanQueuedFrom(t *testing.T, sp *QueuedSpace, prefix, from string) string {
	t.Helper()
	var start []byte
	if from != "" {
		start = []byte(from)
	}
	var out []string
	err := sp.ScanFrom([]byte(prefix), start, func(k, v []byte) error {
		out = append(out, string(k)+"="+string(v))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(out, " ")
}

func writeQueued(t *testing.T, sp *QueuedSpace, kvs ...string) {
	t.Helper()
	var keys, vals [][]byte
	for _, kv := range kvs {
		k, v, _ := strings.Cut(kv, "=")
		keys, vals = append(keys, []byte(k)), append(vals, []byte(v))
	}
	if err := sp.WriteRun(keys, vals); err != nil {
		t.Fatal(err)
	}
}

// TestQueuedSpaceNeverWaits: while every write of the scratch's files is
// held by the disk, a QueuedSpace's writes and deletes return and its
// scans see them, over what the disk has; once the disk goes on, they are
// written, and the scans see the same.
func TestQueuedSpaceNeverWaits(t *testing.T) {
	stall := diskstall.New(scratchWrites)
	s := openOn(t, stall.Wrap(vfs.NewMem()))
	defer s.Close()
	defer stall.Release() // first: a failed test must not leave the store stuck
	x := s.Scratch("job")
	sp, other := x.QueuedSpace("gbk/"), x.QueuedSpace("pend/")
	writeQueued(t, sp, "a1=x", "a2=y", "b1=z")
	if err := sp.Flush(); err != nil {
		t.Fatal(err)
	}
	stall.Arm()
	// Memtables' worth of bulk, so the writer waits for flushes (settle),
	// which the disk holds.
	bulk := x.QueuedSpace("bulk/")
	for i := range 4 * scratchMemTable >> 20 {
		if err := bulk.WriteRun([][]byte{fmt.Appendf(nil, "%04d", i)}, [][]byte{incompressible(1 << 20)}); err != nil {
			t.Fatal(err)
		}
	}
	writeQueued(t, sp, "a3=w", "c1=v")
	testwait.Closed(t, 20*time.Second, "the spill writer held by the disk", stall.Stalled)
	done := make(chan struct{})
	go func() { // all of it must return with the disk held
		defer close(done)
		writeQueued(t, other, "a1=other")
		if err := sp.DeletePrefix([]byte("a")); err != nil {
			t.Error(err)
		}
		writeQueued(t, sp, "a2=again")
	}()
	testwait.Closed(t, 20*time.Second, "spill writes and deletes while the disk is held", done)
	const want = "a2=again b1=z c1=v"
	if got := scanQueued(t, sp, ""); got != want {
		t.Errorf("scan while held: %q, want %q", got, want)
	}
	if got := scanQueued(t, sp, "a"); got != "a2=again" {
		t.Errorf("scan of a while held: %q", got)
	}
	if n, _ := sp.Queued(); n == 0 {
		t.Errorf("Queued while held: 0, want the held writes")
	}
	stall.Release()
	if err := sp.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := scanQueued(t, sp, ""); got != want {
		t.Errorf("scan once written: %q, want %q", got, want)
	}
	if got := scanQueued(t, other, ""); got != "a1=other" {
		t.Errorf("the other space: %q", got)
	}
	if n, full := sp.Queued(); n != 0 || full {
		t.Errorf("Queued once written: %d, %v; want 0, false", n, full)
	}
}

// TestQueuedSpaceMatchesModel: random writes, deletes and scans through a
// QueuedSpace, its writer going on beside them, read as a map would.
func TestQueuedSpaceMatchesModel(t *testing.T) {
	s := openOn(t, vfs.NewMem())
	defer s.Close()
	sp := s.Scratch("job").QueuedSpace("q/")
	model := map[string]string{}
	rng := rand.New(rand.NewPCG(1, 2))
	key := func() string { return fmt.Sprintf("%c%d", 'a'+rng.IntN(3), rng.IntN(20)) }
	for i := range 3000 {
		switch r := rng.IntN(10); {
		case r < 6:
			var kvs []string
			for j := range 1 + rng.IntN(4) { // a key twice in a run: the later wins
				k := key()
				model[k] = fmt.Sprintf("%d.%d", i, j)
				kvs = append(kvs, k+"="+model[k])
			}
			writeQueued(t, sp, kvs...)
		case r < 8:
			p := key()[:1+rng.IntN(2)]
			if err := sp.DeletePrefix([]byte(p)); err != nil {
				t.Fatal(err)
			}
			maps.DeleteFunc(model, func(k, _ string) bool { return strings.HasPrefix(k, p) })
		default:
			p, from := key()[:rng.IntN(3)], ""
			if rng.IntN(2) == 0 { // a scan that goes on from a key
				from = key()
			}
			var want []string
			for _, k := range slices.Sorted(maps.Keys(model)) {
				if strings.HasPrefix(k, p) && k >= from {
					want = append(want, k+"="+model[k])
				}
			}
			if got := scanQueuedFrom(t, sp, p, from); got != strings.Join(want, " ") {
				t.Fatalf("op %d: scan %q from %q = %q, want %q", i, p, from, got, strings.Join(want, " "))
			}
		}
	}
}

// TestQueuedSpaceFailsAfter: a queued write the disk refuses (no room
// left past the reserve) fails every operation after it, naming the
// cause.
func TestQueuedSpaceFailsAfter(t *testing.T) {
	fs := vfs.NewMem()
	s := openOn(t, fs, WithReserve(64<<20))
	defer s.Close()
	sp := s.Scratch("job").QueuedSpace("spill/")
	fs.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: 10 << 20, TotalBytes: 1 << 30, UsedBytes: 1<<30 - 10<<20})
	if err := sp.WriteRun([][]byte{[]byte("k")}, [][]byte{make([]byte, 5<<20)}); err != nil {
		t.Fatalf("queuing: %v (the queue never waits nor fails before the disk does)", err)
	}
	if err := sp.Flush(); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("flush: %v, want ENOSPC", err)
	}
	for what, err := range map[string]error{
		"write":  sp.WriteRun([][]byte{[]byte("k2")}, [][]byte{[]byte("v")}),
		"delete": sp.DeletePrefix(nil),
		"scan":   sp.Scan(nil, func(k, v []byte) error { return nil }),
	} {
		if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "/state") {
			t.Errorf("%s after the failed write: %v, want ENOSPC naming the state dir", what, err)
		}
	}
}

func scanView(t *testing.T, scan func([]byte, func(k, v []byte) error) error, prefix string) string {
	t.Helper()
	var out []string
	if err := scan([]byte(prefix), func(k, v []byte) error {
		out = append(out, string(k)+"="+string(v))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return strings.Join(out, " ")
}

// TestQueuedSpaceView: a view reads what the space held when it was
// taken, on disk and queued, whatever is deleted and written after and
// wherever the writer is; the scratch's removal with a view open neither
// waits for it nor lets it read.
func TestQueuedSpaceView(t *testing.T) {
	s := openOn(t, vfs.NewMem())
	defer s.Close()
	x := s.Scratch("job")
	sp := x.QueuedSpace("p/")
	early, releaseEarly, err := sp.View() // before anything is written
	if err != nil {
		t.Fatal(err)
	}
	defer releaseEarly()
	writeQueued(t, sp, "a=1", "b=2")
	if err := sp.Flush(); err != nil {
		t.Fatal(err)
	}
	writeQueued(t, sp, "c=3") // maybe still queued when the view is taken
	scan, release, err := sp.View()
	if err != nil {
		t.Fatal(err)
	}
	if err := sp.DeletePrefix(nil); err != nil {
		t.Fatal(err)
	}
	writeQueued(t, sp, "d=4")
	if err := sp.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := scanView(t, scan, ""); got != "a=1 b=2 c=3" {
		t.Errorf("view: %q, want what the space held when it was taken", got)
	}
	if got := scanView(t, early, ""); got != "" {
		t.Errorf("view taken before any write: %q, want nothing", got)
	}
	if got := scanQueued(t, sp, ""); got != "d=4" {
		t.Errorf("the space itself: %q", got)
	}
	release()
	if err := scan(nil, func(k, v []byte) error { return nil }); err == nil {
		t.Error("a released view read")
	}
	kept, _, err := sp.View() // never released: Remove must not wait for it
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Remove(); err != nil {
		t.Fatal(err)
	}
	if err := kept(nil, func(k, v []byte) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Errorf("a view of a removed scratch: %v, want ErrClosed", err)
	}
}

// TestDeleteDropsQueuedWrites: a delete drops the queued writes it wholly
// covers that the writer has not begun, so what is read back and dropped
// before the writer reaches it is never written; other writes stay.
func TestDeleteDropsQueuedWrites(t *testing.T) {
	stall := diskstall.New(scratchWrites)
	s := openOn(t, stall.Wrap(vfs.NewMem()))
	defer s.Close()
	defer stall.Release()
	x := s.Scratch("job")
	sp := x.QueuedSpace("pend/")
	writeQueued(t, sp, "k0=first")
	if err := sp.Flush(); err != nil {
		t.Fatal(err)
	}
	stall.Arm()
	bulk := x.QueuedSpace("bulk/") // holds the writer in settle
	for i := range 4 * scratchMemTable >> 20 {
		if err := bulk.WriteRun([][]byte{fmt.Appendf(nil, "%04d", i)}, [][]byte{incompressible(1 << 20)}); err != nil {
			t.Fatal(err)
		}
	}
	testwait.Closed(t, 20*time.Second, "the spill writer held by the disk", stall.Stalled)
	before, _ := sp.Queued()
	writeQueued(t, sp, "k1/a=x", "k1/b=y")
	writeQueued(t, sp, "k1/c=z", "k2=kept")
	if err := sp.DeletePrefix([]byte("k1/")); err != nil {
		t.Fatal(err)
	}
	after, _ := sp.Queued()
	mixed := int64(len("pend/k1/c") + len("z") + len("pend/k2") + len("kept"))
	if after != before+mixed {
		t.Errorf("Queued %d before, %d after the delete; want the covered run gone, the mixed run's %d bytes kept", before, after, mixed)
	}
	written := s.WrittenBytes()
	stall.Release()
	if err := sp.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := scanQueued(t, sp, ""); got != "k0=first k2=kept" {
		t.Errorf("scan once written: %q", got)
	}
	if n := s.WrittenBytes() - written; n != uint64(before+mixed) {
		t.Errorf("wrote %d bytes after the delete, want the %d queued but the dropped run", n, before+mixed)
	}
}
