package engine

import (
	"slices"

	"github.com/beam-runner/beam-runner/runner/engine/agg"
	"github.com/beam-runner/beam-runner/runner/stagekind"
)

// A batch job's spill writes queue for the store's writer goroutine
// (agg.Queuing), so the driver never waits on the disk. While that queue
// is full the engine keeps what it would spill in memory, past its
// budget. So while it is full, the stages that produce into a spilling
// GroupByKey or into spilled pending input start no new bundles (their
// running ones finish): the producers wait for the disk, as they did when
// the driver wrote each spill itself, while the stages downstream keep
// running and free memory. The hold lifts once the writer has caught up,
// which Ready polls for every spillPollMs.
//
// It cannot deadlock: the writer drains the queue on its own, and stages
// upstream of a side input are never held (producers). Streaming jobs
// have flow control (flowctl.go) instead: their backlog stays in the
// source.

// spillHolder names the spill queue in a held stage's heldBy.
const spillHolder = "spill queue"

// spillPollMs is how often, in ms of processing time, a job held by its
// spill queue looks again: a queue write takes about that long.
const spillPollMs = 10

// spillQueueFull reports whether a batch job's spill queue is full.
func (f *flow) spillQueueFull() bool {
	if f.spec.Streaming {
		return false
	}
	if f.pend != nil && agg.SpillFull(f.pend.sp) {
		return true
	}
	for _, st := range f.stages {
		if st.spec.Kind == stagekind.GBK && st.spec.Agg.Spill != nil && agg.SpillFull(st.spec.Agg.Spill) {
			return true
		}
	}
	return false
}

// spills reports whether what st's producers send it may go to the
// spill: a GroupByKey's buffered values, or an SDK stage's pending input.
func (f *flow) spills(st *stage) bool {
	switch st.spec.Kind {
	case stagekind.GBK:
		return st.spec.Agg.Spill != nil
	case stagekind.SDK:
		return f.pend != nil
	}
	return false
}

// updateSpillHolds holds the producers of every stage that spills while
// the spill queue is full; it reports whether a hold lifted.
func (f *flow) updateSpillHolds() (lifted bool) {
	full := f.spillQueueFull()
	for _, st := range f.stages {
		lifted = lifted || (!full && st.held())
		st.fc.heldBy = st.fc.heldBy[:0]
	}
	if !full {
		return lifted
	}
	for _, st := range f.stages {
		if !f.spills(st) {
			continue
		}
		for _, p := range f.producers(st) {
			if !slices.Contains(p.fc.heldBy, spillHolder) {
				p.fc.heldBy = append(p.fc.heldBy, spillHolder)
			}
		}
	}
	return false
}

// spillHeld reports whether the spill queue holds a stage now.
func (f *flow) spillHeld() bool {
	if f.flowOn() {
		return false
	}
	for _, st := range f.stages {
		if st.held() {
			return true
		}
	}
	return false
}
