package execute

import (
	"testing"

	"github.com/beam-runner/beam-runner/runner/engine"
	"github.com/beam-runner/beam-runner/runner/metrics"
)

// TestDroppedCounters: only what a stage dropped since the last report
// becomes a counter, and the job's counters add up to the engine's totals.
func TestDroppedCounters(t *testing.T) {
	store := metrics.NewStore()
	prev := map[string]engine.Dropped{}
	for _, now := range []map[string]engine.Dropped{
		{"s1": {Late: 3}},
		{"s1": {Late: 3}, "s2": {Closed: 2}},
		{"s1": {Late: 10, Closed: 1}, "s2": {Closed: 2}},
	} {
		for id, d := range droppedSince(prev, now) {
			store.AddBundle(droppedCounters("gbk-"+id, d))
		}
		prev = now
	}
	got := map[string]float64{}
	for _, mi := range store.Results() {
		r, err := metrics.Read(mi)
		if err != nil {
			t.Fatal(err)
		}
		if r.Labels["NAMESPACE"] != droppedNamespace {
			t.Errorf("counter %v: namespace %q", r.Labels, r.Labels["NAMESPACE"])
		}
		got[r.Labels["PTRANSFORM"]+"/"+r.Labels["NAME"]] = r.Value
	}
	want := map[string]float64{
		"gbk-s1/" + droppedLateName: 10, "gbk-s1/" + droppedClosedName: 1, "gbk-s2/" + droppedClosedName: 2,
	}
	if len(got) != len(want) {
		t.Errorf("counters %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
	if d := droppedSince(prev, prev); len(d) != 0 {
		t.Errorf("nothing new dropped, yet reported %v", d)
	}
}
