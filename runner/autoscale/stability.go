package autoscale

import (
	"fmt"
	"math"
	"strings"
)

// envView is one environment's figures for a pass.
type envView struct {
	e          EnvInput
	lo, hi     int
	needed     float64
	raw        float64
	throughput float64
	demand     float64
	unmeasured []string
}

func (p *Policy) view(e EnvInput, stages []StageDecision, perWorker float64) envView {
	v := envView{e: e, lo: max(e.MinWorkers, 1), hi: math.MaxInt32}
	if e.MaxWorkers > 0 {
		v.hi = max(e.MaxWorkers, v.lo)
	}
	for _, s := range stages {
		if s.Env != e.ID {
			continue
		}
		v.needed += s.Needed
		v.throughput += s.Observed
		v.demand += s.TargetIn
		if s.Unmeasured {
			v.unmeasured = append(v.unmeasured, s.ID)
		}
	}
	v.raw = v.needed / (perWorker * capacity(e))
	return v
}

func (v envView) clamp(n int) int { return min(max(n, v.lo), v.hi) }

func (v envView) decision(desired int, reason string, args ...any) EnvDecision {
	return EnvDecision{ID: v.e.ID, Current: v.e.Workers, Desired: desired, Needed: v.needed,
		Raw: v.raw, Reason: fmt.Sprintf(reason, args...)}
}

// decideStreamEnv sizes one environment of a streaming job: DS2's need
// over the target utilization, within the bounds, after the stability
// rules (stability.go's doc in docs/scaling.md).
func (p *Policy) decideStreamEnv(e EnvInput, stages []StageDecision, drain string, sourceRate float64, nowMs int64) EnvDecision {
	p.State.init()
	v := p.view(e, stages, p.Config.TargetUtilization)
	p.judge(e.ID, v.throughput, nowMs)
	cur := e.Workers
	if len(v.unmeasured) > 0 {
		return p.apply(v, v.clamp(cur), sourceRate, nowMs,
			"holding: stages %s have input but no processing rate yet", strings.Join(v.unmeasured, ","))
	}
	if drain == "" { // a backlog's catch-up need is not noise; no scale-down goes past it
		p.noteNeed(e.ID, v.raw, nowMs)
	}
	want := v.clamp(ceil(v.raw))
	switch {
	case want > cur:
		return p.scaleUp(v, want, sourceRate, nowMs)
	case want < cur:
		return p.scaleDown(v, drain, sourceRate, nowMs)
	}
	return p.apply(v, v.clamp(cur), sourceRate, nowMs, "steady: %d workers cover the need at %.0f%% utilization",
		cur, p.Config.TargetUtilization*100)
}

func (p *Policy) scaleUp(v envView, want int, sourceRate float64, nowMs int64) EnvDecision {
	cur := v.e.Workers
	if t, blocked := p.blockedUp(v.e.ID, cur, sourceRate); blocked {
		return p.apply(v, v.clamp(cur), sourceRate, nowMs,
			"holding: the scale-up %d -> %d at %s/s from the sources did not raise throughput; not repeated at the same rates",
			t.From, t.To, num(t.SourceRate))
	}
	if ceil(v.raw) < want {
		return p.apply(v, want, sourceRate, nowMs, "raise to the min %d", v.lo)
	}
	d := p.apply(v, want, sourceRate, nowMs, "scale up: need %s busy s/s over %.0f%% utilization",
		num(v.needed), p.Config.TargetUtilization*100)
	if want == v.hi && ceil(v.raw) > v.hi {
		d.Reason += fmt.Sprintf(" (capped at max %d)", v.hi)
	}
	return d
}

// scaleDown gives workers back unless a backlog is being worked off or the
// environment changed within the scale-down interval; it goes only to
// ⌈peak × (1+DownHysteresis)⌉, peak the highest raw need in the
// scale-down window, so that noise cannot flip-flop it.
func (p *Policy) scaleDown(v envView, drain string, sourceRate float64, nowMs int64) EnvDecision {
	cur := v.e.Workers
	peak := p.State.PeakNeed(v.e.ID)
	to := v.clamp(ceil(peak * (1 + p.Config.DownHysteresis)))
	last, changed := p.State.LastChangeMs[v.e.ID]
	switch {
	case cur > v.hi:
		return p.apply(v, v.hi, sourceRate, nowMs, "scale down to the max %d", v.hi)
	case v.clamp(ceil(v.raw*(1+p.Config.DownHysteresis))) >= cur:
		return p.apply(v, cur, sourceRate, nowMs, "holding: the saving is within the %.0f%% hysteresis",
			p.Config.DownHysteresis*100)
	case drain != "":
		return p.apply(v, cur, sourceRate, nowMs, "holding: no scale-down while %s", drain)
	case to >= cur:
		return p.apply(v, cur, sourceRate, nowMs, "holding: a pass in the last %ds needed %.3f workers",
			p.Config.DownWindowMs/1000, peak)
	case changed && nowMs-last < p.Config.ScaleDownIntervalMs:
		return p.apply(v, cur, sourceRate, nowMs, "holding: last change %ds ago, scale-down interval %ds",
			(nowMs-last)/1000, p.Config.ScaleDownIntervalMs/1000)
	}
	d := p.apply(v, to, sourceRate, nowMs, "scale down: need %s busy s/s over %.0f%% utilization",
		num(v.needed), p.Config.TargetUtilization*100)
	if peak > v.raw {
		d.Reason += fmt.Sprintf(" (the highest in the last %ds: %.3f workers)", p.Config.DownWindowMs/1000, peak)
	}
	return d
}

// apply records a change in the state (its time; a scale-up meant to
// raise throughput becomes a trial) and returns the decision.
func (p *Policy) apply(v envView, to int, sourceRate float64, nowMs int64, reason string, args ...any) EnvDecision {
	d := v.decision(to, reason, args...)
	if to == v.e.Workers {
		return d
	}
	p.State.LastChangeMs[v.e.ID] = nowMs
	delete(p.State.Trials, v.e.ID)
	if to > v.e.Workers && v.demand > v.throughput*(1+p.Config.Noise) {
		p.State.Trials[v.e.ID] = ScaleUp{AtMs: nowMs, From: v.e.Workers, To: to,
			SourceRate: sourceRate, Throughput: v.throughput}
	}
	return d
}

// capacity is busy seconds per second one of e's workers supplies.
func capacity(e EnvInput) float64 {
	if e.Capacity <= 0 {
		return 1
	}
	return e.Capacity
}
