package agg

import (
	"bytes"
	"sort"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"

	"github.com/beam-runner/beam-runner/runner/coders"
)

// session returns the open session of key that the new window [start,
// maxTS] belongs to, merging every session it overlaps (Beam's
// MergeOverlappingIntervalWindows: windows merge when they intersect,
// merely touching windows do not). A key's open sessions never overlap each
// other, so the new window and the sessions it overlaps form one interval.
func (g *GBK) session(key []byte, start, maxTS int64) *winState {
	end := maxTS + 1
	var overlap []*winState
	lo, hi := start, end
	for _, w := range g.sessions[string(key)] {
		if w.start < end && start < w.maxTS+1 {
			overlap = append(overlap, w)
			lo, hi = min(lo, w.start), max(hi, w.maxTS+1)
		}
	}
	if len(overlap) == 1 && overlap[0].start == lo && overlap[0].maxTS+1 == hi {
		return overlap[0]
	}
	win := coders.AppendIntervalWindow(nil, coders.IntervalWindow{Start: lo, End: hi})
	w := g.create(key, win, lo, hi-1)
	g.sessions[string(w.key)] = append(g.sessions[string(w.key)], w)
	if len(overlap) > 0 {
		g.absorb(w, overlap)
	}
	return w
}

// absorb moves the state of the merged sessions srcs into w, as Beam
// merges state: values concatenate (in session start order, so the result
// is deterministic), counts and holds combine and trigger state merges (see
// mergeStates). Pane numbering does not merge: a new window starts afresh,
// and a source that is the merge result itself keeps its own. Java's
// ReduceFnRunner keeps pane info by the window itself (StateStyle.DIRECT)
// and clears the merged-away windows' ("the merge result window gets to
// start fresh if it is new"); trigger.py's GeneralTriggerDriver does the same.
func (g *GBK) absorb(w *winState, srcs []*winState) {
	sort.Slice(srcs, func(i, j int) bool {
		if srcs[i].start != srcs[j].start {
			return srcs[i].start < srcs[j].start
		}
		return bytes.Compare(srcs[i].win, srcs[j].win) < 0 // custom windows have no start
	})
	trigs := make([][]nstate, len(srcs))
	for i, s := range srcs {
		trigs[i] = s.trig
		w.appendValuesFrom(s)
		if s.hasHold {
			w.hold, w.hasHold = combineHold(g.s.outputTime, w.hold, w.hasHold, s.hold), true
		}
		if g.sameWindow(s.win, w.win) {
			w.index, w.nonEarly, w.lateBirth = s.index, s.nonEarly, s.lateBirth
		}
		g.open--
		g.forget(s)
	}
	if w.hasHold && g.s.outputTime == pipepb.OutputTime_END_OF_WINDOW {
		w.hold = w.maxTS // the merged window's end, not a source's
	}
	mergeStates(w.trig, trigs)
	fixMerged(g.s.trig.root, w.trig, trigs, env{wm: g.wm, now: g.now, maxTS: w.maxTS})
}

// sameWindow reports whether two encoded windows are one window; custom
// windows are compared by the SDK's bytes, without the max timestamp (see
// heldWindows).
func (g *GBK) sameWindow(a, b []byte) bool {
	if g.s.window == coders.CustomWindows {
		return bytes.Equal(sdkName(a), sdkName(b))
	}
	return bytes.Equal(a, b)
}

// removeSession drops w from its key's merge set.
func (g *GBK) removeSession(w *winState) {
	k := string(w.key)
	ws := g.sessions[k]
	for i, x := range ws {
		if x == w {
			ws = append(ws[:i], ws[i+1:]...)
			break
		}
	}
	if len(ws) == 0 {
		delete(g.sessions, k)
	} else {
		g.sessions[k] = ws
	}
}
