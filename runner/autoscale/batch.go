package autoscale

import "fmt"

// batchStages sizes a batch job by its remaining work: each source's
// remaining input (Backlog, or Pending), each stage's pending input plus
// what its upstreams have still to emit to it (their remaining input ×
// selectivity along the edge), turned into busy seconds by the stage's
// measured rate. TargetIn and TargetOut hold remaining elements, not
// rates; Needed is busy seconds; Parallelism ⌈Needed / BatchFinish⌉,
// at most MaxParallel when known.
func (g *graph) batchStages(c Config) []StageDecision {
	finish := float64(c.BatchFinishMs) / 1000
	out := make([]StageDecision, len(g.order))
	for i, s := range g.order {
		d := StageDecision{ID: s.ID, Env: s.Env, Source: len(s.Inputs) == 0,
			Selectivity: s.Rates.Selectivity, BusySource: s.Rates.BusySource}
		own := s.Pending
		if d.Source && own == (Amount{}) {
			own = s.Backlog
		}
		rem, ok := elements(own, s, d.Source)
		if !ok {
			d.Note = "remaining work in bytes with no bytes per element measured; not counted"
		}
		d.Observed, d.Rate = s.Rates.ObservedIn, s.Rates.ProcessingRate
		if d.Source {
			d.Observed, d.Rate, d.Selectivity = s.Rates.ObservedOut, s.Rates.OutputRate, 1
		}
		for _, e := range s.Inputs {
			rem += out[g.index[e.From]].TargetOut * edgeShare(g.order[g.index[e.From]], e)
		}
		d.Backlog, d.TargetIn, d.TargetOut = rem, rem, rem
		if !d.Source {
			d.TargetOut = rem * selectivity(s, &d)
		}
		size(&d)
		d.Parallelism, d.MaxParallel, d.Blocked = ceil(d.Needed/finish), s.MaxParallel, s.Blocked
		if s.MaxParallel > 0 {
			d.Parallelism = min(d.Parallelism, s.MaxParallel)
		}
		out[i] = d
	}
	return out
}

// decideBatchEnv: grow to the workers that finish the measured remaining
// work in BatchFinish, within the bounds; give workers back only in the
// tail, when the environment's stages with work left can run fewer
// bundles at once (Σ MaxParallel, known for all of them) than its workers
// hold, and at the end. A blocked stage's bundles run after the others':
// they count as the most of them, not on top. The tail gives workers back at once, rates
// measured or not, with no scale-down interval: the job is ending. Sizing down by the work formula instead would
// shed workers while most of the work remains, stretching the job.
func (p *Policy) decideBatchEnv(e EnvInput, stages []StageDecision) EnvDecision {
	finish := float64(p.Config.BatchFinishMs) / 1000
	v := p.view(e, stages, finish)
	runnable, later, known, left := 0, 0, true, false
	for _, s := range stages {
		if s.Env != e.ID || s.TargetIn <= 0 {
			continue
		}
		left = true
		known = known && s.MaxParallel > 0
		if s.Blocked {
			later = max(later, s.MaxParallel)
		} else {
			runnable += s.MaxParallel
		}
	}
	runnable = max(runnable, later)
	cur := e.Workers
	tail := v.hi
	if known {
		tail = v.clamp(ceil(float64(runnable) / capacity(e)))
	}
	switch {
	case !left:
		return v.decision(v.lo, "batch: no work left")
	case v.needed == 0 && tail < cur:
		// The job is ending: what is left cannot use the workers,
		// measured or not.
		return v.decision(tail, "batch: tail: %d bundles can run: give workers back", runnable)
	case v.needed == 0:
		return v.decision(v.clamp(cur), "batch: holding: no rates measured yet")
	}
	want := min(v.clamp(ceil(v.raw)), tail)
	reason := fmt.Sprintf("batch: %s busy s of remaining work to finish in %ss", num(v.needed), num(finish))
	switch {
	case want > cur:
		return v.decision(want, "%s: scale up", reason)
	case tail < cur:
		return v.decision(tail, "%s: tail: %d bundles can run: give workers back", reason, runnable)
	}
	return v.decision(v.clamp(cur), "%s: steady", reason)
}
