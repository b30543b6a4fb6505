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
		d.Parallelism = ceil(d.Needed / finish)
		if s.MaxParallel > 0 {
			d.Parallelism = min(d.Parallelism, s.MaxParallel)
		}
		out[i] = d
	}
	return out
}

// decideBatchEnv: the workers that finish the measured remaining work in
// BatchFinish, no more than the environment's stages can keep busy (Σ of
// their parallelism), within the bounds. It starts at the minimum, grows
// as rates are measured and gives workers back as the work runs out (the
// tail), with the hysteresis but without the streaming interval: a batch
// job's remaining work only shrinks.
func (p *Policy) decideBatchEnv(e EnvInput, stages []StageDecision) EnvDecision {
	finish := float64(p.Config.BatchFinishMs) / 1000
	v := p.view(e, stages, finish)
	slots := 0
	for _, s := range stages {
		if s.Env == e.ID {
			slots += s.Parallelism
		}
	}
	cur := e.Workers
	if v.needed == 0 && len(v.unmeasured) > 0 {
		return v.decision(v.clamp(cur), "batch: holding: no rates measured yet")
	}
	want := v.clamp(min(ceil(v.raw), ceil(float64(slots)/capacity(e))))
	reason := fmt.Sprintf("batch: %s busy s of remaining work to finish in %.0fs, %d bundles can run",
		num(v.needed), finish, slots)
	switch {
	case want > cur:
		return v.decision(want, "%s: scale up", reason)
	case want < cur:
		to := v.clamp(min(ceil(v.raw*(1+p.Config.DownHysteresis)), ceil(float64(slots)/capacity(e))))
		if to < cur {
			return v.decision(to, "%s: give workers back", reason)
		}
		return v.decision(cur, "%s: holding within the %.0f%% hysteresis", reason, p.Config.DownHysteresis*100)
	}
	return v.decision(cur, "%s: steady", reason)
}
