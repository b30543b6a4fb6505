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
