package autoscale

// State is all the policy remembers between passes, as plain data (the
// driver snapshots it with the job; maps are keyed by environment or
// source stage id).
type State struct {
	// LastChangeMs is when each environment's workers last changed.
	LastChangeMs map[string]int64
	// LastBacklog is each source's backlog, in elements, at the last
	// pass, made at LastPassMs.
	LastBacklog map[string]float64
	LastPassMs  int64
	// Trials are scale-ups meant to raise throughput, not yet judged.
	Trials map[string]ScaleUp
	// Ineffective are scale-ups that did not raise throughput: not
	// repeated while the job's source rate stays within the noise of
	// SourceRate.
	Ineffective map[string]ScaleUp
	// Needs are each environment's raw worker needs of the passes within
	// the scale-down window, oldest first.
	Needs map[string][]Need
}

// Need is one pass's raw worker need of an environment.
type Need struct {
	AtMs int64
	Raw  float64
}

// ScaleUp is one environment's scale-up and the rates it was made at.
type ScaleUp struct {
	AtMs     int64
	From, To int
	// SourceRate is the job's observed source rate (elements emitted per
	// second by all sources) at the time.
	SourceRate float64
	// Throughput is the environment's observed rate (Σ of its stages'
	// observed rates) before the scale-up.
	Throughput float64
}

func (s *State) init() {
	if s.LastChangeMs == nil {
		s.LastChangeMs = map[string]int64{}
	}
	if s.LastBacklog == nil {
		s.LastBacklog = map[string]float64{}
	}
	if s.Trials == nil {
		s.Trials = map[string]ScaleUp{}
	}
	if s.Ineffective == nil {
		s.Ineffective = map[string]ScaleUp{}
	}
	if s.Needs == nil {
		s.Needs = map[string][]Need{}
	}
}

// judge settles env's pending scale-up once a window has passed since it:
// ineffective when the environment's throughput did not rise beyond the
// noise.
func (p *Policy) judge(env string, throughput float64, nowMs int64) {
	t, ok := p.State.Trials[env]
	if !ok || nowMs < t.AtMs+p.Config.EffectDelayMs {
		return
	}
	delete(p.State.Trials, env)
	if throughput <= t.Throughput*(1+p.Config.Noise) {
		p.State.Ineffective[env] = t
		return
	}
	delete(p.State.Ineffective, env)
}

// blockedUp reports the remembered ineffective scale-up that forbids
// growing env past current at this source rate; a source rate outside
// the noise of the remembered one forgets it.
func (p *Policy) blockedUp(env string, current int, sourceRate float64) (ScaleUp, bool) {
	t, ok := p.State.Ineffective[env]
	if !ok {
		return t, false
	}
	if !within(sourceRate, t.SourceRate, p.Config.Noise) {
		delete(p.State.Ineffective, env)
		return t, false
	}
	return t, current >= t.From
}

func within(a, b, noise float64) bool {
	if b == 0 {
		return a == 0
	}
	d := (a - b) / b
	return d <= noise && d >= -noise
}

// noteNeed keeps env's raw need of this pass and forgets those older
// than the scale-down window.
func (p *Policy) noteNeed(env string, raw float64, nowMs int64) {
	kept := p.State.Needs[env][:0]
	for _, n := range p.State.Needs[env] {
		if n.AtMs > nowMs-p.Config.DownWindowMs && n.AtMs <= nowMs {
			kept = append(kept, n)
		}
	}
	p.State.Needs[env] = append(kept, Need{AtMs: nowMs, Raw: raw})
}

// PeakNeed is the highest raw need of env's passes in the scale-down
// window (the last pass's included).
func (s *State) PeakNeed(env string) float64 {
	peak := 0.0
	for _, n := range s.Needs[env] {
		peak = max(peak, n.Raw)
	}
	return peak
}
