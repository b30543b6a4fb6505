package autoscale

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestStateSnapshot: the policy's memory is plain data. A policy restored
// from its JSON decides what the original decides, so a job resumed from
// a checkpoint keeps its scale-down interval and its ineffective
// scale-ups.
func TestStateSnapshot(t *testing.T) {
	in := func(now int64, backlog float64) Input {
		src := StageInput{ID: "src", Env: "py", Backlog: Amount{Elements: backlog},
			Rates: Rates{Out: 10000, ObservedOut: 1000, OutputRate: 10000, BusyMs: 1000}}
		work := StageInput{ID: "work", Env: "py", Inputs: []Edge{{From: "src"}},
			Rates: Rates{In: 10000, ObservedIn: 1000, ProcessingRate: 1000, Selectivity: 1, BusyMs: 10000}}
		return Input{NowMs: now, Stages: []StageInput{src, work},
			Envs: []EnvInput{{ID: "py", Workers: 2, MinWorkers: 1, MaxWorkers: 10}}}
	}
	p := NewPolicy(Config{})
	for i, b := range []float64{0, 5000, 10000} {
		if _, err := p.Decide(in(int64(i+1)*10_000, b)); err != nil {
			t.Fatal(err)
		}
	}
	if len(p.State.LastChangeMs) == 0 {
		t.Fatalf("the passes changed nothing, so the snapshot would prove little: %+v", p.State)
	}
	raw, err := json.Marshal(p.State)
	if err != nil {
		t.Fatal(err)
	}
	q := NewPolicy(Config{})
	if err := json.Unmarshal(raw, &q.State); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p.State, q.State) {
		t.Fatalf("state after a JSON round trip differs:\n%+v\n%+v", p.State, q.State)
	}
	next := in(40_000, 20000)
	a, errA := p.Decide(next)
	b, errB := q.Decide(next)
	if errA != nil || errB != nil || !reflect.DeepEqual(a, b) {
		t.Fatalf("restored policy decides differently:\n%v (%v)\n%v (%v)", a, errA, b, errB)
	}
}

// A window fed far more often than it is read holds about one window of
// samples, and the rates it derives are those of the samples inside it.
func TestWindowBoundedWithoutReads(t *testing.T) {
	w := NewWindow(1000)
	for i := int64(0); i < 20_000; i++ {
		if err := w.Add(Sample{StartMs: i, EndMs: i + 1, ElementsIn: 1, BusyMs: 1, BusyFromSDK: true}); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(w.samples); n > 1000+1000/evictEvery+1 {
		t.Errorf("window holds %d samples of 1 ms; want at most about 1000", n)
	}
	r := w.Rates(20_000, 1)
	if r.In < 999 || r.In > 1001 || r.BusyMsPerSec < 999 {
		t.Errorf("rates over the last second: in %v, busy %v ms/s; want 1000 and 1000", r.In, r.BusyMsPerSec)
	}
}
