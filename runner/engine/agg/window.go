package agg

import (
	"github.com/beam-runner/beam-runner/runner/coders"
)

// winState is everything buffered for one (key, window).
type winState struct {
	key, win []byte // encoded; owned by the GBK
	id       string // map key: len(win) + win + key
	start    int64  // interval start (MinTimestamp for the global window)
	maxTS    int64
	gen      uint32 // bumped when the window's bounds change: event timers go stale

	// Values are stored back to back in data; ends[i] is where value i ends.
	// Emitted panes slice into data, so data is never overwritten: discarding
	// starts a new array.
	data []byte
	ends []int

	newCount int   // elements since the last emitted pane (Java's NonEmptyPanes)
	hold     int64 // combined output time of the on-time elements since the last pane
	hasHold  bool

	index     int64 // panes emitted so far
	nonEarly  int64 // ON_TIME and LATE panes emitted so far
	lateBirth bool  // first element arrived after the end of the window

	eowDone bool // the end-of-window evaluation happened
	ptAt    int64
	ptSet   bool   // a processing-time wakeup at ptAt is in the heap
	ptGen   uint32 // bumped per queued wakeup, so duplicates go stale
	closed  bool   // the trigger finished; later elements are dropped
	dead    bool   // garbage collected or merged away
	dirty   bool   // reached by the current batch of input (see BeginInput)

	trig []nstate
}

func (w *winState) values() [][]byte {
	vs := make([][]byte, len(w.ends))
	start := 0
	for i, end := range w.ends {
		vs[i] = w.data[start:end:end]
		start = end
	}
	return vs
}

func (w *winState) appendValue(v []byte) {
	w.data = append(w.data, v...)
	w.ends = append(w.ends, len(w.data))
	w.newCount++
}

func (w *winState) clearValues() {
	w.data, w.ends = nil, nil
}

// appendValuesFrom moves o's values after w's.
func (w *winState) appendValuesFrom(o *winState) {
	base := len(w.data)
	w.data = append(w.data, o.data...)
	for _, e := range o.ends {
		w.ends = append(w.ends, base+e)
	}
	w.newCount += o.newCount
}

// windowBounds decodes a window's start and max timestamp.
func (s *settings) windowBounds(win []byte) (start, maxTS int64, err error) {
	if s.window == coders.GlobalWindow && len(win) != 0 {
		return 0, 0, errGlobalWindowBytes
	}
	return coders.WindowBounds(s.window, win)
}
