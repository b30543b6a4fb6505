package engine

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// TestSplitRequestsAndDrain pins the split policy the driver carries out,
// through Ready: on a Tick, dynamic splits halve idle-capacity
// candidates; Drain checkpoints every running splittable bundle once and
// stops dynamic splits. Each request is handed out once.
func TestSplitRequestsAndDrain(t *testing.T) {
	e, bs := oneSplittableBundle(t)
	e.AdvanceProcessingTime(1000 + splitMinAge)
	if got := nextReady(e).Splits; len(got) != 0 {
		t.Fatalf("splits without a tick: %v", got)
	}
	e.Tick()
	if got := nextReady(e).Splits; len(got) != 1 || got[0] != (SplitRequest{Bundle: bs[0].ID, Fraction: 0.5}) {
		t.Fatalf("splits after a tick = %v, want a half split of bundle %d", got, bs[0].ID)
	}
	if got := nextReady(e).Splits; len(got) != 0 {
		t.Fatalf("splits handed out twice: %v", got)
	}
	if isDraining(e) {
		t.Fatal("draining before Drain")
	}
	e.Drain()
	if got := nextReady(e).Splits; len(got) != 1 || got[0] != (SplitRequest{Bundle: bs[0].ID}) {
		t.Fatalf("splits after Drain = %v, want a checkpoint of bundle %d", got, bs[0].ID)
	}
	e.Drain()
	if got := nextReady(e).Splits; len(got) != 0 {
		t.Fatalf("second Drain = %v, want nothing", got)
	}
	e.AdvanceProcessingTime(1000 + 4*splitMinAge)
	e.Tick()
	if got := nextReady(e).Splits; len(got) != 0 || !isDraining(e) {
		t.Fatalf("splits while draining = %v, want none", got)
	}
}

// Ready reports the engine's failure alone, and a finished job as Done
// with nothing to start or wait for.
func TestReadyErrAndDone(t *testing.T) {
	e, bs := oneSplittableBundle(t)
	if rd := nextReady(e); rd.Done || rd.Err != nil {
		t.Fatalf("Ready with bundle %d running = %+v", bs[0].ID, rd)
	}
	if err := e.Commit(bs[0].ID, Result{}); err != nil {
		t.Fatal(err)
	}
	if rd := nextReady(e); !rd.Done || len(rd.Bundles) > 0 || rd.Wake {
		t.Fatalf("Ready after the last commit = %+v, want Done", rd)
	}
	e.flow.fail(errors.New("boom"))
	if rd := nextReady(e); rd.Err == nil || rd.Done || len(rd.Bundles) > 0 {
		t.Fatalf("Ready of a failed engine = %+v, want its error alone", rd)
	}
}

// Ready is a pure read: asked again before Advance it returns the same
// decisions and leaves the engine as it was; Advance acknowledges them, so
// they are handed out once, and decisions made after the Ready was read
// (a Tick's splits) wait for the next.
func TestReadyIsPureAdvanceAcknowledges(t *testing.T) {
	e, err := New(splittableSpec(t, 2))
	if err != nil {
		t.Fatal(err)
	}
	e.Advance(Ready{}) // decides: applies the TestStream's event, cuts
	before, err := e.SnapshotRequeuingFlight()
	if err != nil {
		t.Fatal(err)
	}
	rd := e.Ready()
	if len(rd.Bundles) == 0 {
		t.Fatal("no bundles decided")
	}
	again := e.Ready()
	if !reflect.DeepEqual(rd, again) {
		t.Fatalf("Ready asked twice differs:\n%+v\n%+v", rd, again)
	}
	after, err := e.SnapshotRequeuingFlight()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Fatal("Ready changed the engine's state")
	}
	e.AdvanceProcessingTime(1000 + splitMinAge)
	e.Tick()
	e.Drain()
	late := e.Ready().Splits
	if len(late) != 2 {
		t.Fatalf("the Tick's split and the Drain's checkpoint = %v, want two", late)
	}
	e.Advance(rd) // acknowledges rd, which the Drain's checkpoints postdate
	next := e.Ready()
	if len(next.Bundles) != 0 {
		t.Fatalf("bundles handed out again after Advance: %+v", next.Bundles)
	}
	if !reflect.DeepEqual(next.Splits, late) {
		t.Fatalf("splits decided after the Ready = %v, want them kept for the next: %v", next.Splits, late)
	}
}
