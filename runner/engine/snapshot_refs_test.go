package engine

import (
	"bytes"
	"slices"
	"testing"

	"github.com/beam-runner/beam-runner/runner/store"
)

// TestSnapshotReadsSpillLater: a snapshot taken with pending input
// spilled and bundles in flight references that input, read nothing; read
// back once the engine has gone on to the end (taking that input, reading
// it back and dropping it from the spill), its bytes are those of a
// snapshot that read the spill at once, and a job restored from them,
// without a spill, ends with the output of one run in memory.
func TestSnapshotReadsSpillLater(t *testing.T) {
	plain := pendPipeline(t)
	e, err := New(plain)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := pendDrive(t, e, nil)
	st, err := store.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	x := st.Scratch("job")
	limited := pendPipeline(t)
	limited.PendingSpill, limited.PendingBudget = x.QueuedSpace("p/"), 1<<20
	limited.Stages[2].Agg.Spill, limited.Stages[2].Agg.SpillBudget = x.QueuedSpace("g/"), 64<<10
	if e, err = New(limited); err != nil {
		t.Fatal(err)
	}
	var snap *Snapshot
	var atOnce []byte
	var before []string // the sink's groups committed before the snapshot
	pendDrive(t, e, func(e *Engine, sofar []string) *Engine {
		if snap != nil || !hasSpilled(e) {
			return e
		}
		started := nextReady(e).Bundles
		if bundlesInFlight(e) == 0 {
			t.Fatal("no bundle in flight at the snapshot: the test shows less than it says")
		}
		if atOnce, err = e.snapshotRequeuing(nil, nil); err != nil {
			t.Fatal(err)
		}
		if snap, err = e.TakeSnapshot(); err != nil {
			t.Fatal(err)
		}
		if len(snap.holes) == 0 {
			t.Fatal("the snapshot read the spilled input itself")
		}
		before = slices.Clone(sofar)
		for _, b := range started {
			pendPlay(t, e, b)
		}
		return e
	})
	if snap == nil {
		t.Fatal("no pending input was ever spilled")
	}
	if err := x.QueuedSpace("p/").Scan(nil, func(k, _ []byte) error {
		t.Fatalf("pending input %q still spilled at the end: the view is not what the test reads", k)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	got, err := snap.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, atOnce) {
		t.Fatalf("the snapshot read back later (%d bytes) differs from one read at once (%d bytes)", len(got), len(atOnce))
	}
	restored, err := Restore(plain, got)
	if err != nil {
		t.Fatal(err)
	}
	after, _ := pendDrive(t, restored, nil)
	all := slices.Concat(before, after)
	slices.Sort(all)
	if !slices.Equal(all, want) {
		t.Fatalf("restored from the snapshot, the sink got %d groups, differing from the %d in memory", len(all), len(want))
	}
}
