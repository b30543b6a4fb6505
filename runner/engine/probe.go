package engine

// A probe picks how many bundles of a stage run at once when running them
// in parallel may not pay: harnesses that share one Python interpreter
// run bundles on threads under one lock. CPU-bound bundles there only
// contend (wordcount over 60 MiB: 40.5 s one at a time, 49-56 s with 2-4),
// while bundles that wait (on I/O, on sleeps) overlap their waits
// (1M synthetic records: 97 s one at a time, 34 s four at a time). So the
// stage starts with one bundle, and each step up must raise the work the
// stage gets done per second by probeGain, measured over probeWindow of
// full concurrency; the first step that does not is taken back and the
// probe settles.
type probe struct {
	limit    int // bundles of the stage allowed in flight now
	max      int // the most it may try
	settled  bool
	winStart int64   // processing time the current window began
	work     int64   // work reported in the current window
	base     float64 // work per ms at limit-1; 0 before the first window
}

// probeWindow is how long, in milliseconds, the stage runs at a
// concurrency before its rate counts.
const probeWindow = 2000

// probeGain is how much faster one more bundle must make the stage.
const probeGain = 1.15

func newProbe(max int) *probe { return &probe{limit: 1, max: max, settled: max <= 1} }

// observe adds work the stage's bundles reported (element counts).
func (p *probe) observe(work int64) {
	if !p.settled {
		p.work += work
	}
}

// tick closes the window once it ran probeWindow with at least limit
// bundles in flight throughout; a window in which fewer ran starts over,
// as it would measure idleness, not concurrency.
func (p *probe) tick(now int64, inFlight int) {
	if p.settled {
		return
	}
	if inFlight < p.limit || p.winStart == 0 {
		p.winStart, p.work = now, 0
		return
	}
	if now-p.winStart < probeWindow {
		return
	}
	rate := float64(p.work) / float64(now-p.winStart)
	switch {
	case p.base == 0 || rate >= probeGain*p.base:
		p.base = rate
		if p.limit < p.max {
			p.limit++
		} else {
			p.settled = true
		}
	default:
		p.limit--
		p.settled = true
	}
	p.winStart, p.work = now, 0
}

// NoteWork records work a running bundle of the stage reported since its
// last report: the driver sums the SDK's element counts.
func (e *Engine) NoteWork(stage string, work int64) {
	if st := e.flow.stage(stage); st != nil && st.probe != nil && work > 0 {
		st.probe.observe(work)
	}
}

// tickProbes advances the probes of stages that have one.
func (f *flow) tickProbes() {
	for _, st := range f.stages {
		if st.probe != nil {
			st.probe.tick(f.now, len(st.flight))
		}
	}
}

// excessCheckpoints checkpoints the newest running bundles of splittable
// stages past what their probe now allows: after a step up that did not
// pay, the extra bundle's rest waits for the others instead of contending.
func (e *Engine) excessCheckpoints() []SplitRequest {
	var out []SplitRequest
	for _, st := range e.flow.stages {
		if st.probe == nil || !st.spec.Splittable {
			continue
		}
		bs := oldestFirst(st.flight)
		for _, b := range bs[min(e.flow.maxBundles(st), len(bs)):] {
			if e.flow.now-b.splitAt >= splitMinAge {
				b.splitAt = e.flow.now
				out = append(out, SplitRequest{Bundle: b.ID})
			}
		}
	}
	return out
}
