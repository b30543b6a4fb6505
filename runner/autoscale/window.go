package autoscale

import "fmt"

// DefaultWindowMs is a stage's rate window when the caller gives none:
// long enough to hold several bundles of a busy stage, short enough to
// follow a step in the input rate within one policy interval.
const DefaultWindowMs = 10_000

// Sample is one finished bundle's or progress report's contribution to a
// stage's window: what it did during [StartMs, EndMs] of the caller's
// clock. A progress report passes the deltas since the bundle's last one.
type Sample struct {
	StartMs, EndMs int64
	// ElementsIn counts the stage's input elements; for a source stage
	// (one with no upstream stage) these are restrictions, and its rates
	// are measured by what it emits instead (see Rates).
	ElementsIn, ElementsOut int64
	BytesIn, BytesOut       int64
	// OutByPCollection splits ElementsOut by output PCollection (Beam's
	// element_count is per PCollection), for a stage whose outputs go to
	// different consumers. Optional.
	OutByPCollection map[string]int64
	// BusyMs is useful time: the sum of the stage's transforms'
	// beam:metric:pardo_execution_time:*_msecs:v1 when BusyFromSDK, else
	// the runner-side bundle duration minus time blocked on the runner.
	BusyMs      int64
	BusyFromSDK bool
	// RunnerBusyMs is the runner-side estimate, bundle duration minus time
	// blocked on the runner, given beside the SDK's figure when the caller
	// has it: the fallback when the SDK's busy time is under-reported.
	RunnerBusyMs int64
	// BackPressuredMs is time this stage's bundles were held by flow
	// control because a stage downstream was over its bound (Flink's
	// meaning: the held stage is the back-pressured one).
	BackPressuredMs int64
	// HoldingMs is time this stage's pending input was over its bound, so
	// that its upstream was held: the stage is the bottleneck then.
	HoldingMs int64
}

// Window accumulates one stage's samples over the last LengthMs.
// Samples that straddle the window's start count in proportion to the
// part of them inside it.
type Window struct {
	LengthMs int64
	samples  []Sample
	sinceMs  int64
	seen     bool
	// evictedMs is the end of the sample whose Add last evicted.
	evictedMs int64
}

// NewWindow returns an empty window of lengthMs (DefaultWindowMs if <= 0).
func NewWindow(lengthMs int64) *Window {
	if lengthMs <= 0 {
		lengthMs = DefaultWindowMs
	}
	return &Window{LengthMs: lengthMs}
}

// Add records a sample. It rejects a sample that ends before it starts or
// has a negative figure: those come from a harness's report, and must not
// turn into negative rates.
func (w *Window) Add(s Sample) error {
	if s.EndMs < s.StartMs {
		return fmt.Errorf("autoscale: sample ends (%d ms) before it starts (%d ms)", s.EndMs, s.StartMs)
	}
	for _, f := range []struct {
		name string
		v    int64
	}{{"elements in", s.ElementsIn}, {"elements out", s.ElementsOut}, {"bytes in", s.BytesIn},
		{"bytes out", s.BytesOut}, {"busy ms", s.BusyMs}, {"runner busy ms", s.RunnerBusyMs},
		{"back-pressured ms", s.BackPressuredMs}, {"holding ms", s.HoldingMs}} {
		if f.v < 0 {
			return fmt.Errorf("autoscale: sample has negative %s (%d)", f.name, f.v)
		}
	}
	if !w.seen || s.StartMs < w.sinceMs {
		w.sinceMs, w.seen = s.StartMs, true
	}
	w.samples = append(w.samples, s)
	// Keep memory bounded when the caller adds more often than it reads,
	// scanning at most once per evictEvery of the window: a busy stage
	// adds a sample per bundle, which must not cost a scan of the window
	// each (amortized O(1); at most 1/evictEvery more samples held).
	if s.EndMs-w.evictedMs >= w.LengthMs/evictEvery {
		w.evict(s.EndMs - w.LengthMs)
	}
	return nil
}

// evictEvery is how many eviction scans Add makes per window length.
const evictEvery = 8

// Observe marks the stage as observed from sinceMs even before its first
// sample, so that a stage that receives nothing shows an observed rate of
// zero over the time it waited rather than no rate at all.
func (w *Window) Observe(sinceMs int64) {
	if !w.seen || sinceMs < w.sinceMs {
		w.sinceMs, w.seen = sinceMs, true
	}
}

// evict drops samples that ended before the window's start.
func (w *Window) evict(startMs int64) {
	w.evictedMs = startMs + w.LengthMs
	keep := w.samples[:0]
	for _, s := range w.samples {
		if s.EndMs >= startMs {
			keep = append(keep, s)
		}
	}
	clear(w.samples[len(keep):])
	w.samples = keep
}

// totals sums the samples' figures inside [startMs, nowMs], prorated.
func (w *Window) totals(startMs, nowMs int64) totals {
	var t totals
	t.outBy = map[string]float64{}
	for _, s := range w.samples {
		f := overlap(s, startMs, nowMs)
		if f == 0 {
			continue
		}
		t.in += f * float64(s.ElementsIn)
		t.out += f * float64(s.ElementsOut)
		t.bytesIn += f * float64(s.BytesIn)
		t.bytesOut += f * float64(s.BytesOut)
		t.runnerBusy += f * float64(s.RunnerBusyMs)
		t.backPressured += f * float64(s.BackPressuredMs)
		t.holding += f * float64(s.HoldingMs)
		if s.BusyFromSDK {
			t.busySDK += f * float64(s.BusyMs)
		} else {
			t.busyRunner += f * float64(s.BusyMs)
		}
		for pc, n := range s.OutByPCollection {
			t.outBy[pc] += f * float64(n)
		}
	}
	return t
}

// overlap is the fraction of s inside [startMs, nowMs]; an instant sample
// counts whole when it falls inside.
func overlap(s Sample, startMs, nowMs int64) float64 {
	if s.EndMs == s.StartMs {
		if s.EndMs >= startMs && s.EndMs <= nowMs {
			return 1
		}
		return 0
	}
	lo, hi := max(s.StartMs, startMs), min(s.EndMs, nowMs)
	if hi <= lo {
		return 0
	}
	return float64(hi-lo) / float64(s.EndMs-s.StartMs)
}

type totals struct {
	in, out, bytesIn, bytesOut float64
	busySDK, busyRunner        float64
	runnerBusy, backPressured  float64
	holding                    float64
	outBy                      map[string]float64
}
