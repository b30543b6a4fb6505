package engine

import (
	"errors"
	"testing"
)

// TestSplitRequestsAndDrain pins the split policy the driver carries out,
// through Ready: on a Tick, dynamic splits halve idle-capacity
// candidates; Drain checkpoints every running splittable bundle once and
// stops dynamic splits. Each request is handed out once.
func TestSplitRequestsAndDrain(t *testing.T) {
	e, bs := oneSplittableBundle(t)
	e.AdvanceProcessingTime(1000 + splitMinAge)
	if got := e.Ready().Splits; len(got) != 0 {
		t.Fatalf("splits without a tick: %v", got)
	}
	e.Tick()
	if got := e.Ready().Splits; len(got) != 1 || got[0] != (SplitRequest{Bundle: bs[0].ID, Fraction: 0.5}) {
		t.Fatalf("splits after a tick = %v, want a half split of bundle %d", got, bs[0].ID)
	}
	if got := e.Ready().Splits; len(got) != 0 {
		t.Fatalf("splits handed out twice: %v", got)
	}
	if isDraining(e) {
		t.Fatal("draining before Drain")
	}
	e.Drain()
	if got := e.Ready().Splits; len(got) != 1 || got[0] != (SplitRequest{Bundle: bs[0].ID}) {
		t.Fatalf("splits after Drain = %v, want a checkpoint of bundle %d", got, bs[0].ID)
	}
	e.Drain()
	if got := e.Ready().Splits; len(got) != 0 {
		t.Fatalf("second Drain = %v, want nothing", got)
	}
	e.AdvanceProcessingTime(1000 + 4*splitMinAge)
	e.Tick()
	if got := e.Ready().Splits; len(got) != 0 || !isDraining(e) {
		t.Fatalf("splits while draining = %v, want none", got)
	}
}

// Ready reports the engine's failure alone, and a finished job as Done
// with nothing to start or wait for.
func TestReadyErrAndDone(t *testing.T) {
	e, bs := oneSplittableBundle(t)
	if rd := e.Ready(); rd.Done || rd.Err != nil {
		t.Fatalf("Ready with bundle %d running = %+v", bs[0].ID, rd)
	}
	if err := e.Commit(bs[0].ID, Result{}); err != nil {
		t.Fatal(err)
	}
	if rd := e.Ready(); !rd.Done || len(rd.Bundles) > 0 || rd.Wake {
		t.Fatalf("Ready after the last commit = %+v, want Done", rd)
	}
	e.flow.fail(errors.New("boom"))
	if rd := e.Ready(); rd.Err == nil || rd.Done || len(rd.Bundles) > 0 {
		t.Fatalf("Ready of a failed engine = %+v, want its error alone", rd)
	}
}
