package engine

import (
	"math"

	"github.com/beam-runner/beam-runner/runner/engine/agg"
	"github.com/beam-runner/beam-runner/runner/stagekind"
)

// A GroupByKey hands out the panes it fired as its readers take them:
// its readers' pending input and the input of their bundles in flight are
// topped up to about pullBytes at a time, so
// a large window's output is not held twice, once as grouped input and once
// as the readers' pending input. The panes not yet handed out hold the
// GBK's output watermark; in a batch job its readers run as soon as the
// GBK's input is complete (canRun).

// pullBytes is how much pending input a GBK's readers get ahead of their
// bundles: by default enough for every bundle slot to get a good-sized
// bundle.
func (f *flow) pullBytes() int {
	if f.spec.PaneRoom > 0 {
		return f.spec.PaneRoom
	}
	return 4 << 20 * max(f.spec.MaxBundles, 1)
}

// paneBudget is how many bytes of panes st may hand out now: -1 (all)
// unless every reader is an unkeyed SDK stage reading it as main input.
func (f *flow) paneBudget(st *stage) int {
	p := f.pcolls[st.spec.Outputs[0]]
	if p == nil || p.data != nil || len(p.consumers) == 0 {
		return -1 // side-input readers need it whole
	}
	most := 0
	for _, c := range p.consumers {
		if c.spec.Kind != stagekind.SDK || c.keyed != nil {
			return -1
		}
		most = max(most, pendingBytes(c)+flightBytes(c))
	}
	return min(max(f.pullBytes()-most, 0), f.pendingRoom())
}

// pendingRoom bounds the panes a GroupByKey hands out while the spill
// queue is full: past the pending budget they would stay in memory
// instead of spilling (pendingSpill.admit), so it hands out only what
// fits in the budget and the rest waits in the GroupByKey until the
// writer catches up. The driver writing each
// spill itself had paced it so.
func (f *flow) pendingRoom() int {
	p := f.pend
	if p == nil || !agg.SpillFull(p.sp) {
		return math.MaxInt
	}
	return max(p.budget-p.mem-p.flight, 0)
}

func pendingBytes(st *stage) int {
	n := 0
	for _, c := range st.pending {
		n += max(len(c.data), c.size)
	}
	return n
}

// flightBytes is the input of st's bundles in flight: panes a reader took
// stay in memory until its bundle commits, so they count against what the
// GBK may hand out, or panes would pile up in bundles as fast as they run.
func flightBytes(st *stage) int {
	n := 0
	for _, b := range st.flight {
		for _, c := range b.Input {
			n += len(c)
		}
	}
	return n
}

// topUpPanes lets each GBK with panes due hand out what its readers have
// room for, and moves watermarks if one handed out its last.
func (f *flow) topUpPanes() {
	finished := false
	for _, st := range f.stages {
		if st.gbk == nil || !st.gbk.Due() {
			continue
		}
		f.emitPanes(st)
		finished = finished || !st.gbk.Due()
	}
	if finished {
		f.recompute()
	}
}
