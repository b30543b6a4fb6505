package engine

import "testing"

// runProbe drives a probe with a stage whose work per ms at each
// concurrency is rate[limit], always as busy as allowed, and returns the
// limit it settles on.
func runProbe(t *testing.T, max int, rate map[int]int64) int {
	t.Helper()
	p := newProbe(max)
	now := int64(1000)
	for step := 0; step < 1000 && !p.settled; step++ {
		p.tick(now, p.limit)
		now += 200
		p.observe(200 * rate[p.limit])
	}
	if !p.settled {
		t.Fatalf("probe never settled: limit %d", p.limit)
	}
	return p.limit
}

// CPU-bound bundles in one interpreter get no faster with company: the
// probe tries two and goes back to one. Bundles that wait overlap: it
// climbs while each step pays probeGain, and stops at its cap.
func TestProbeSettles(t *testing.T) {
	for _, tc := range []struct {
		name string
		max  int
		rate map[int]int64
		want int
	}{
		{"cpu-bound", 4, map[int]int64{1: 100, 2: 85, 3: 80, 4: 80}, 1},
		{"waiting", 4, map[int]int64{1: 100, 2: 190, 3: 260, 4: 300}, 4},
		{"pays to three", 8, map[int]int64{1: 100, 2: 150, 3: 200, 4: 205}, 3},
		{"cap of one", 1, map[int]int64{1: 100}, 1},
	} {
		if got := runProbe(t, tc.max, tc.rate); got != tc.want {
			t.Errorf("%s: settled at %d bundles, want %d", tc.name, got, tc.want)
		}
	}
}

// A window counts only while the stage runs as many bundles as allowed:
// time with fewer in flight measures idleness, and starts the window over.
func TestProbeIgnoresIdleWindows(t *testing.T) {
	p := newProbe(4)
	p.tick(1000, 1)
	p.observe(100)
	p.tick(1000+probeWindow, 1) // one full window at one bundle: step up
	if p.limit != 2 {
		t.Fatalf("limit %d after a full window, want 2", p.limit)
	}
	p.observe(1) // a trickle while the second bundle is not yet running
	for now := int64(1000 + probeWindow); now < 1000+10*probeWindow; now += 100 {
		p.tick(now, 1)
	}
	if p.limit != 2 || p.settled {
		t.Fatalf("limit %d, settled %v after windows with one bundle at limit 2; want the step still open", p.limit, p.settled)
	}
}

// The engine applies the probe: a probing splittable stage runs one bundle
// (no split for idle capacity) until the probe allows two; when a step is
// taken back, the newest bundle past the limit is checkpointed.
func TestProbeBoundsStage(t *testing.T) {
	spec := splittableSpec(t, 4)
	spec.Stages[1].ProbeBundles = true
	e, bs := startOne(t, spec)
	e.AdvanceProcessingTime(1000 + splitMinAge)
	if got := e.splitRequests(); len(got) != 0 {
		t.Fatalf("splitRequests = %v at one allowed bundle, want none", got)
	}
	e.NoteWork("sdf", 100)
	e.AdvanceProcessingTime(1000 + splitMinAge + probeWindow)
	got := e.splitRequests()
	if len(got) != 1 || got[0] != (SplitRequest{Bundle: bs[0].ID, Fraction: dynamicSplitFraction}) {
		t.Fatalf("splitRequests = %v once two are allowed, want a dynamic split of %d", got, bs[0].ID)
	}
	if _, err := e.ApplySplit(bs[0].ID, SplitResult{FirstResidual: -1, Residuals: []Residual{{Element: globalKV(1, "a", "2")}}}); err != nil {
		t.Fatal(err)
	}
	more := e.Ready().Bundles
	if len(more) != 1 {
		t.Fatalf("residual did not start a second bundle: %v", more)
	}
	// Two bundles do no more work than one did: the step is taken back.
	now := 1000 + splitMinAge + probeWindow
	for i := 0; i < 3; i++ {
		now += probeWindow
		e.NoteWork("sdf", 50)
		e.AdvanceProcessingTime(int64(now))
	}
	got = e.splitRequests()
	if len(got) != 1 || got[0] != (SplitRequest{Bundle: more[0].ID}) {
		t.Fatalf("splitRequests = %v after the step back, want a checkpoint of the newer bundle %d", got, more[0].ID)
	}
}
