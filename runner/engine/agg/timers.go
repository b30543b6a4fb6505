package agg

import (
	"bytes"
	"container/heap"
)

// timer wakes a window at a time. Entries are never removed early: a timer
// whose window moved on (gen changed, window dead) is skipped when popped,
// which keeps scheduling O(log n) without an indexed heap.
type timer struct {
	at  int64
	w   *winState
	gen uint32
}

// timerHeap orders timers by time, then window bytes, then key bytes, so
// windows due at the same time fire in a deterministic order: by window end
// (interval windows encode their end first), then key.
type timerHeap []timer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	a, b := h[i], h[j]
	if a.at != b.at {
		return a.at < b.at
	}
	if c := bytes.Compare(a.w.win, b.w.win); c != 0 {
		return c < 0
	}
	return bytes.Compare(a.w.key, b.w.key) < 0
}
func (h timerHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *timerHeap) Push(x any)   { *h = append(*h, x.(timer)) }
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = timer{}
	*h = old[:len(old)-1]
	return t
}

func (h *timerHeap) add(at int64, w *winState, gen uint32) {
	heap.Push(h, timer{at: at, w: w, gen: gen})
}

// popDue pops the next live timer for which due(at) holds.
func (h *timerHeap) popDue(due func(at int64) bool, live func(timer) bool) (timer, bool) {
	for h.Len() > 0 && due((*h)[0].at) {
		t := heap.Pop(h).(timer)
		if live(t) {
			return t, true
		}
	}
	return timer{}, false
}

// peekLive drops stale timers from the top and returns the earliest live one.
func (h *timerHeap) peekLive(live func(timer) bool) (timer, bool) {
	for h.Len() > 0 {
		if t := (*h)[0]; live(t) {
			return t, true
		}
		heap.Pop(h)
	}
	return timer{}, false
}
