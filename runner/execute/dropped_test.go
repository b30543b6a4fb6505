package execute

import (
	"testing"
	"time"

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

// TestDropLogDue: a stage's first drop is logged at once, later ones at
// most every dropLogEvery.
func TestDropLogDue(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		last, now time.Time
		want      bool
	}{
		{time.Time{}, t0, true},
		{t0, t0.Add(time.Second), false},
		{t0, t0.Add(dropLogEvery - time.Millisecond), false},
		{t0, t0.Add(dropLogEvery), true},
	} {
		if got := dropLogDue(c.last, c.now); got != c.want {
			t.Errorf("dropLogDue(%v, %v) = %v, want %v", c.last, c.now, got, c.want)
		}
	}
	logs := restoredDropLogs(map[string]engine.Dropped{"s3": {Late: 5}})
	if l := logs["s3"]; l.totals.Late != 5 || !l.at.IsZero() {
		t.Errorf("restored drops %+v: want logged totals 5 and no time, so the next drop logs at once", l)
	}
}
