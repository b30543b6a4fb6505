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
