package engine

import (
	"math/rand/v2"
	"testing"
)

// simBundle is one running bundle of a simulated stage: its element count
// and when it last reported it.
type simBundle struct {
	count, reported float64
	lastAt, nextAt  int64
	endAt           int64
}

// runProbe drives a probe with a stage always as busy as allowed, whose
// bundles together do rate[limit] elements per ms. Bundles live 1-3 s and
// each reports its count about every 200 ms, at its own moments and late
// by up to 100 ms, as progress answers arrive. It returns the limit the
// probe settles on.
func runProbe(t *testing.T, seed uint64, max int, rate map[int]float64) int {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	p := newProbe(max)
	var bs []*simBundle
	start := func(now int64) *simBundle {
		return &simBundle{nextAt: now + 200 + rng.Int64N(100), endAt: now + 1000 + rng.Int64N(2000)}
	}
	for now := int64(1000); now < 1000+600_000 && !p.settled; now += 10 {
		for i, b := range bs {
			if now >= b.endAt {
				bs[i] = start(now)
			}
		}
		for len(bs) < p.limit {
			bs = append(bs, start(now))
		}
		bs = bs[:p.limit]
		for _, b := range bs {
			b.count += 10 * rate[p.limit] / float64(p.limit)
			if now >= b.nextAt {
				if b.lastAt > 0 {
					p.observe(int64(b.count)-int64(b.reported), b.lastAt, now)
				}
				b.reported, b.lastAt, b.nextAt = float64(int64(b.count)), now, now+150+rng.Int64N(100)
			}
		}
		if now%200 == 0 {
			p.tick(now, len(bs))
		}
	}
	if !p.settled {
		t.Fatalf("probe never settled: limit %d", p.limit)
	}
	return p.limit
}

// CPU-bound bundles in one interpreter get no faster with company: the
// probe tries two and goes back to one. Bundles that wait overlap: it
// climbs while each step pays probeGain, and stops at its cap. However the
// bundles' reports fall, each seed must settle where the rates say.
func TestProbeSettles(t *testing.T) {
	for _, tc := range []struct {
		name string
		max  int
		rate map[int]float64
		want int
	}{
		{"cpu-bound", 4, map[int]float64{1: 100, 2: 85, 3: 80, 4: 80}, 1},
		{"cpu-bound, even", 4, map[int]float64{1: 100, 2: 100, 3: 100, 4: 100}, 1},
		{"waiting", 4, map[int]float64{1: 100, 2: 190, 3: 260, 4: 300}, 4},
		{"pays to three", 8, map[int]float64{1: 100, 2: 150, 3: 200, 4: 205}, 3},
		{"cap of one", 1, map[int]float64{1: 100}, 1},
	} {
		for seed := uint64(0); seed < 50; seed++ {
			if got := runProbe(t, seed, tc.max, tc.rate); got != tc.want {
				t.Errorf("%s, seed %d: settled at %d bundles, want %d", tc.name, seed, got, tc.want)
			}
		}
	}
}

// A window counts only while the stage runs as many bundles as allowed:
// time with fewer in flight measures idleness, and starts the window over.
func TestProbeIgnoresIdleWindows(t *testing.T) {
	p := newProbe(4)
	p.tick(1000, 1)
	p.observe(100, 1000, 1000+probeWindow)
	p.tick(1000+probeWindow, 1) // one full window at one bundle: step up
	if p.limit != 2 {
		t.Fatalf("limit %d after a full window, want 2", p.limit)
	}
	// A trickle while the second bundle is not yet running.
	p.observe(1, 1000+probeWindow, 1100+probeWindow)
	for now := int64(1000 + probeWindow); now < 1000+10*probeWindow; now += 100 {
		p.tick(now, 1)
	}
	if p.limit != 2 || p.settled {
		t.Fatalf("limit %d, settled %v after windows with one bundle at limit 2; want the step still open", p.limit, p.settled)
	}
}

// A window closes only once it measured a rate, and an interval that
// began before the window (at the concurrency before) does not count in
// it.
func TestProbeCountsIntervalsInsideTheWindow(t *testing.T) {
	p := newProbe(4)
	p.tick(1000, 1)
	p.tick(3000, 1)
	if p.limit != 1 {
		t.Fatalf("limit %d after a window without reports, want 1: nothing was measured", p.limit)
	}
	p.observe(100, 1000, 2000)
	p.tick(3000, 1)
	if p.limit != 2 || p.base != 0.1 {
		t.Fatalf("limit %d, base %v after one window; want 2 and 0.1 elements/ms", p.limit, p.base)
	}
	p.observe(1_000_000, 2900, 3100) // straddles the window's start
	p.observe(10, 3100, 3300)        // two bundles at 0.05/ms each: no gain
	p.tick(5000, 2)
	if p.limit != 1 || !p.settled {
		t.Fatalf("limit %d, settled %v; want the step taken back on the interval inside the window", p.limit, p.settled)
	}
}
