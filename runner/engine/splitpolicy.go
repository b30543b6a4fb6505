package engine

import "sort"

// dynamicSplitFraction is what a dynamic split asks the SDK to keep of a
// bundle's remaining work: half, so the residual can fill an idle slot
// with as much work as the bundle keeps.
const dynamicSplitFraction = 0.5

// SplitRequest asks the driver to split a running bundle, keeping Fraction
// of its remaining work; 0 checkpoints it at once.
type SplitRequest struct {
	Bundle   int
	Fraction float64
}

// SplitRequests returns the dynamic splits worth requesting now, halving
// each of SplitCandidates' bundles, after the checkpoints a memory limit
// asks of long-running source bundles (pendspill.go). None while draining: every residual
// would be truncated again, and a truncation may grow a small restriction.
func (e *Engine) SplitRequests() []SplitRequest {
	if e.draining {
		return nil
	}
	out := append(e.memoryCheckpoints(), e.excessCheckpoints()...)
	for _, id := range e.SplitCandidates() {
		out = append(out, SplitRequest{Bundle: id, Fraction: dynamicSplitFraction})
	}
	return out
}

// Drain starts draining the job and returns the checkpoints that begin
// it: every running bundle of a splittable stage stops at what it has
// read, oldest first, so its residual is truncated. Later calls return
// nothing: the bundles started after it are truncated before they run.
func (e *Engine) Drain() []SplitRequest {
	if e.draining {
		return nil
	}
	e.draining = true
	ids := make([]int, 0, len(e.flight))
	for id, b := range e.flight {
		if e.stage(b.Stage).spec.Splittable {
			ids = append(ids, id)
		}
	}
	sort.Ints(ids)
	out := make([]SplitRequest, len(ids))
	for i, id := range ids {
		out[i] = SplitRequest{Bundle: id}
	}
	return out
}

// Draining reports whether Drain was called.
func (e *Engine) Draining() bool { return e.draining }
