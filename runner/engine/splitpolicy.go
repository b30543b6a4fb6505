package engine

import "sort"

// dynamicSplitFraction is what a dynamic split asks the SDK to keep of a
// bundle's remaining work: half, so the residual can fill an idle slot
// with as much work as the bundle keeps (see also spareKeep).
const dynamicSplitFraction = 0.5

// SplitRequest asks the driver to split a running bundle, keeping Fraction
// of its remaining work; 0 checkpoints it at once.
type SplitRequest struct {
	Bundle   int
	Fraction float64
}

// Tick tells the engine that a tick of the driver's clock passed (the
// driver ticks every 200ms, in virtual time too): it decides the splits
// worth requesting now, which the next Ready hands out.
func (e *Engine) Tick() {
	e.splits = append(e.splits, e.splitRequests()...)
}

// splitRequests returns the dynamic splits worth requesting now
// (splitCandidates), after the checkpoints a memory limit asks of
// long-running source bundles (pendspill.go). None while draining: every
// residual would be truncated again, and a truncation may grow a small
// restriction.
func (e *Engine) splitRequests() []SplitRequest {
	if e.draining {
		return nil
	}
	out := append(e.flowCheckpoints(), e.memoryCheckpoints()...)
	out = append(out, e.excessCheckpoints()...)
	out = append(out, e.streamCheckpoints()...)
	return append(out, e.splitCandidates()...)
}

// Drain starts draining the job: the next Ready asks the checkpoints that
// begin it: every running bundle of a splittable stage stops at what it
// has read, oldest first, so its residual is truncated. Later calls do
// nothing: the bundles started after it are truncated before they run.
func (e *Engine) Drain() {
	if e.draining {
		return
	}
	e.draining = true
	ids := make([]int, 0, len(e.flight))
	for id, b := range e.flight {
		if e.flow.stage(b.Stage).spec.Splittable {
			ids = append(ids, id)
		}
	}
	sort.Ints(ids)
	for _, id := range ids {
		e.splits = append(e.splits, SplitRequest{Bundle: id})
	}
}
