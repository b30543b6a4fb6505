package agg

import (
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/coders"
)

// fire tells the trigger it fired and emits the pane it implies.
func (g *GBK) fire(w *winState, e env) {
	root := g.s.trig.root
	onFire(root, w.trig, e)
	finished := w.trig[root.id].finished
	g.emit(w, finished)
	if finished {
		g.close(w)
	}
}

// emit produces w's next pane if Beam would make it observable (Java's
// ReduceFnRunner.needToEmit): it has new elements, or it is an empty on-time
// pane under FIRE_ALWAYS, or an empty final pane under EMIT_ALWAYS. Pane
// numbering only advances for panes actually emitted.
func (g *GBK) emit(w *winState, final bool) {
	timing := g.timing(w)
	empty := w.newCount == 0
	if !empty || (timing == coders.TimingOnTime && g.s.emitEmptyOn) || (final && g.s.emitEmptyEnd) {
		g.out = append(g.out, g.pane(w, timing, final))
	}
	w.newCount, w.hasHold = 0, false
	if final || !g.s.accumulating {
		w.clearValues()
	}
}

// timing classifies the next pane of w (Java's PaneInfoTracker): EARLY while
// the input watermark has not passed the end of the window, then one
// ON_TIME pane, then LATE.
func (g *GBK) timing(w *winState) coders.Timing {
	switch {
	case w.nonEarly > 0 || w.lateBirth:
		return coders.TimingLate
	case g.wm <= w.maxTS:
		return coders.TimingEarly
	default:
		return coders.TimingOnTime
	}
}

func (g *GBK) pane(w *winState, timing coders.Timing, final bool) Pane {
	info := coders.PaneInfo{IsFirst: w.index == 0, IsLast: final, Timing: timing, Index: w.index, OnTimeIndex: -1}
	if timing != coders.TimingEarly {
		info.OnTimeIndex = w.nonEarly
		w.nonEarly++
	}
	w.index++
	return Pane{Key: w.key, Window: w.win, Values: w.values(), Timestamp: g.paneTimestamp(w), Info: info}
}

// paneTimestamp is the combined output time of the pane's on-time elements,
// or the end of the window when it has none (late elements, empty panes),
// as Java's WatermarkHold.extractAndRelease does.
func (g *GBK) paneTimestamp(w *winState) int64 {
	if w.hasHold {
		return min(w.hold, w.maxTS)
	}
	return w.maxTS
}

// addHold folds an element's output time into w's hold. Like Java's
// addElementHold, elements that would be late for the output are left out
// (they get the end-of-window timestamp) so the hold never goes back in
// time. Java compares with the output watermark; the GBK does not track
// that, so it uses the input watermark, which is never earlier.
func (g *GBK) addHold(w *winState, ts int64) {
	out := ts
	if g.s.outputTime == pipepb.OutputTime_END_OF_WINDOW {
		out = w.maxTS
	}
	if out < g.wm || w.maxTS < g.wm {
		return
	}
	w.hold, w.hasHold = combineHold(g.s.outputTime, w.hold, w.hasHold, out), true
}

func combineHold(ot pipepb.OutputTime_Enum, cur int64, has bool, t int64) int64 {
	switch {
	case !has:
		return t
	case ot == pipepb.OutputTime_LATEST_IN_PANE:
		return max(cur, t)
	default:
		return min(cur, t)
	}
}

// close ends w after its trigger finished. A non-merging window stays as a
// tombstone until garbage collection so later elements for it are dropped.
// A closed session leaves the key's merge set, as in Java's
// MergingActiveWindowSet: new elements start a new session.
func (g *GBK) close(w *winState) {
	w.closed = true
	w.trig = nil
	w.clearValues()
	g.open--
	if g.s.merging {
		g.forget(w)
	}
}

// collect garbage-collects w once the watermark passed its end plus the
// allowed lateness, emitting the final pane if one is due.
func (g *GBK) collect(w *winState) {
	if !w.closed {
		g.emit(w, true)
		w.closed = true
		g.open--
	}
	g.forget(w)
}

// forget removes w from the indexes; its queued timers become stale.
func (g *GBK) forget(w *winState) {
	w.dead = true
	delete(g.wins, w.id)
	if g.s.merging {
		g.removeSession(w)
	}
}

// Hold is the earliest output timestamp this GBK may still produce, i.e. its
// output watermark hold: callers compute the output watermark as
// min(input watermark, Hold()). It is coders.MaxTimestamp when nothing is
// pending.
func (g *GBK) Hold() int64 {
	if !g.holdValid {
		g.holdCache = g.computeHold()
		g.holdValid = true
	}
	return g.holdCache
}

// computeHold takes the minimum over all windows; the result does not depend
// on map order.
func (g *GBK) computeHold() int64 {
	if g.fast != nil {
		return g.fast.hold()
	}
	h := coders.MaxTimestamp
	if g.winMerges != nil && len(g.winMerges.waiting) > 0 {
		h = g.winMerges.minTS
	}
	for _, w := range g.wins {
		if t, ok := g.holdOf(w); ok {
			h = min(h, t)
		}
	}
	return h
}

// holdOf is the watermark hold one window needs (Java's WatermarkHold):
// its elements' combined output time; for pending data that got no element
// hold, the end of the window if that is still ahead, else the
// garbage-collection time (such a pane is late, but must not be dropped
// downstream); and the end of the window or the garbage-collection time
// when an empty on-time or final pane may still be emitted.
func (g *GBK) holdOf(w *winState) (int64, bool) {
	switch {
	case w.closed:
		return 0, false
	case w.hasHold:
		return w.hold, true
	case w.newCount > 0 && g.wm <= w.maxTS:
		return w.maxTS, true
	case w.newCount > 0:
		return g.s.gcTime(w.maxTS), true
	case g.s.emitEmptyOn && w.nonEarly == 0 && !w.lateBirth:
		return w.maxTS, true
	case g.s.emitEmptyEnd:
		return g.s.gcTime(w.maxTS), true
	}
	return 0, false
}
