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
//
// The rate is measured per bundle, between consecutive progress reports
// of that bundle: the elements it did over the time between them. Summing
// the stage's reports over a window instead counts each bundle's work
// since its previous report, which may lie before the window: with
// bundles reporting at different moments that sum is off by +-50%, enough
// to step a CPU-bound stage up to two bundles at ~30% loss.
type probe struct {
	limit    int // bundles of the stage allowed in flight now
	max      int // the most it may try
	settled  bool
	winStart int64 // processing time the current window began
	// done and busy sum, over the report intervals inside the window,
	// the elements done and the bundle-milliseconds they took.
	done, busy int64
	base       float64 // stage's elements per ms at limit-1; 0 before the first window
}

// probeWindow is how long, in milliseconds, the stage runs at a
// concurrency before its rate counts.
const probeWindow = 2000

// probeGain is how much faster one more bundle must make the stage.
const probeGain = 1.15

func newProbe(max int) *probe { return &probe{limit: 1, max: max, settled: max <= 1} }

// observe adds one bundle's work between two of its reports: n elements
// from processing time from to to. An interval begun before the window
// may include time at another concurrency, so it does not count.
func (p *probe) observe(n, from, to int64) {
	if p.settled || from < p.winStart || to <= from || n < 0 {
		return
	}
	p.done += n
	p.busy += to - from
}

// tick closes the window once it ran probeWindow with at least limit
// bundles in flight throughout and measured some bundle's rate; a window
// in which fewer ran starts over, as it would measure idleness, not
// concurrency.
func (p *probe) tick(now int64, inFlight int) {
	if p.settled {
		return
	}
	if inFlight < p.limit || p.winStart == 0 {
		p.restart(now)
		return
	}
	if now-p.winStart < probeWindow || p.busy == 0 {
		return
	}
	// limit bundles ran throughout, each at the mean per-bundle rate.
	rate := float64(p.limit) * float64(p.done) / float64(p.busy)
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
	p.restart(now)
}

func (p *probe) restart(now int64) { p.winStart, p.done, p.busy = now, 0, 0 }

// NoteProgress records a running bundle's element count so far, as the
// runner heard it at processing time at (the SDK's counts are
// cumulative). Stages whose probe is still trying concurrencies measure
// their rate from consecutive reports of each bundle, from its first
// report of work on.
func (e *Engine) NoteProgress(id int, elements, at int64) {
	b := e.flight[id]
	if b == nil || at <= b.reportAt {
		return
	}
	st := e.stage(b.Stage)
	if st.probe == nil {
		return
	}
	// Until a bundle reports its first element it is starting (its
	// descriptor, its DoFns' setup, its input in transit): that time says
	// nothing of the rate at this concurrency.
	if b.reported > 0 {
		st.probe.observe(elements-b.reported, b.reportAt, at)
	}
	b.reported, b.reportAt = elements, at
}

// Probing reports whether the stage's probe is still measuring, so its
// bundles' progress is worth asking for often.
func (e *Engine) Probing(stage string) bool {
	st := e.stage(stage)
	return st != nil && st.probe != nil && !st.probe.settled
}

// ProbeLimit is how many bundles the stage's probe allows now and whether
// it has settled; ok is false for a stage without a probe.
func (e *Engine) ProbeLimit(stage string) (limit int, settled, ok bool) {
	st := e.stage(stage)
	if st == nil || st.probe == nil {
		return 0, false, false
	}
	return st.probe.limit, st.probe.settled, true
}

// tickProbes advances the probes of stages that have one.
func (e *Engine) tickProbes() {
	for _, st := range e.stages {
		if st.probe != nil {
			st.probe.tick(e.now, len(st.flight))
		}
	}
}

// excessCheckpoints checkpoints the newest running bundles of splittable
// stages past what their probe now allows: after a step up that did not
// pay, the extra bundle's rest waits for the others instead of contending.
func (e *Engine) excessCheckpoints() []SplitRequest {
	var out []SplitRequest
	for _, st := range e.stages {
		if st.probe == nil || !st.spec.Splittable {
			continue
		}
		bs := oldestFirst(st.flight)
		for _, b := range bs[min(e.maxBundles(st), len(bs)):] {
			if e.now-b.splitAt >= splitMinAge {
				b.splitAt = e.now
				out = append(out, SplitRequest{Bundle: b.ID})
			}
		}
	}
	return out
}
