package agg

import (
	"bytes"
	"fmt"
	"maps"
	"slices"

	"github.com/beam-runner/beam-runner/runner/coders"
)

// A custom merging WindowFn's merges are the SDK's to decide (its
// beam:transform:merge_windows:v1). Until the SDK has answered, elements of
// new windows wait in the GBK unassigned, and its watermark waits with
// them, because Java's ReduceFnRunner merges a key's windows before it
// processes the elements that reached them. The driver takes the pending
// work with TakeWindowMergeRequests, runs it through the SDK, and hands
// the answer to ApplyWindowMerges; only one request is out at a time, so
// an answer always describes the windows the GBK still holds.
//
// A request's answer may come back in parts: one key's answer is one
// element of the window-merge stage's output, and the runner may split
// the merge bundle (its residual, the keys after the split, runs as a
// bundle of its own) and cuts a large output into chunks. Each key is
// answered exactly once; a key's elements join their windows when its
// answer comes, and the request ends, letting the watermark move, once
// every key is answered.

// WindowMergeRequest asks which of one key's windows merge: its open
// windows and the windows its waiting elements were assigned.
type WindowMergeRequest struct {
	Key     []byte
	Windows [][]byte // encoded, distinct, in a deterministic order
}

// WindowMergeResult is the SDK's answer for one key: each merge turns Originals
// into Result. Windows it does not name stay as they are.
type WindowMergeResult struct {
	Key    []byte
	Merges []WindowMerge
}

// WindowMerge is one merge of several windows into one.
type WindowMerge struct {
	Result    []byte
	Originals [][]byte
}

// waiting is an element whose window the SDK has not merged yet.
type waiting struct {
	key, win, value []byte
	ts, arrival     int64
}

// sdkWindowMerges is the GBK's merge bookkeeping for SDKWindowMerge.
type sdkWindowMerges struct {
	waiting []waiting
	dirty   map[string]bool // keys with waiting elements not yet requested
	asked   map[string]bool // keys of the request out, true until answered (nil: none out)
	left    int             // keys of the request out not yet answered
	askedN  int             // waiting[:askedN] arrived before the request
	askedWM int64           // the input watermark when the request went out
	wantWM  int64           // the latest input watermark the GBK was given
	minTS   int64           // earliest waiting element, for the hold
}

func (m *sdkWindowMerges) busy() bool { return len(m.waiting) > 0 || m.asked != nil }

// addWaiting queues an element of a window not yet merged.
func (g *GBK) addWaiting(key, window, value []byte, ts, processingTime int64) {
	m := g.winMerges
	if len(m.waiting) == 0 {
		m.minTS = ts
	}
	m.minTS = min(m.minTS, ts)
	m.waiting = append(m.waiting, waiting{key: key, win: append([]byte(nil), window...), value: value, ts: ts, arrival: max(g.now, processingTime)})
	m.dirty[string(key)] = true
	g.holdValid = false
}

// WindowMergesWaiting reports whether windows wait for the SDK and no request is
// out, i.e. whether TakeWindowMergeRequests would return work.
func (g *GBK) WindowMergesWaiting() bool {
	return g.winMerges != nil && g.winMerges.asked == nil && len(g.winMerges.dirty) > 0
}

// TakeWindowMergeRequests hands out the keys whose windows wait for the SDK, in
// key order; nil while a request is out or nothing waits.
func (g *GBK) TakeWindowMergeRequests() []WindowMergeRequest {
	if !g.WindowMergesWaiting() {
		return nil
	}
	m := g.winMerges
	keys := slices.Sorted(maps.Keys(m.dirty))
	newWins := map[string]map[string]bool{}
	for _, w := range m.waiting {
		if m.dirty[string(w.key)] {
			if newWins[string(w.key)] == nil {
				newWins[string(w.key)] = map[string]bool{}
			}
			newWins[string(w.key)][string(w.win)] = true
		}
	}
	reqs := make([]WindowMergeRequest, 0, len(keys))
	for _, k := range keys {
		set := newWins[k]
		for _, w := range g.sessions[k] {
			set[string(w.win)] = true
		}
		req := WindowMergeRequest{Key: []byte(k)}
		for _, w := range slices.Sorted(maps.Keys(set)) {
			req.Windows = append(req.Windows, []byte(w))
		}
		reqs = append(reqs, req)
	}
	m.asked, m.dirty, m.askedWM, m.askedN = m.dirty, map[string]bool{}, m.wantWM, len(m.waiting)
	m.left = len(m.asked)
	return reqs
}

// ApplyWindowMerges applies answers to the request out, for some or all of its
// keys, and adds the elements of those keys that were waiting when the
// request went out to their windows, as one batch of input. Once every
// key is answered it moves the watermark as far as the answers allow.
func (g *GBK) ApplyWindowMerges(results []WindowMergeResult) error {
	m := g.winMerges
	if m == nil || m.asked == nil {
		return fmt.Errorf("agg: merge results arrived with no merge request out")
	}
	keys := map[string]bool{}
	for _, r := range results {
		open, ok := m.asked[string(r.Key)]
		switch {
		case !ok:
			return fmt.Errorf("agg: merge results for key %x, which was not asked", r.Key)
		case !open || keys[string(r.Key)]:
			return fmt.Errorf("agg: merge results for key %x arrived twice", r.Key)
		}
		keys[string(r.Key)] = true
	}
	into := map[string][]byte{} // key + window -> merged window
	held := g.heldWindows(keys)
	for _, r := range results {
		for _, mg := range r.Merges {
			mg.Originals = asHeld(held, r.Key, mg.Originals)
			if err := g.mergeInto(r.Key, mg, into); err != nil {
				return err
			}
		}
		m.asked[string(r.Key)] = false
		m.left--
	}
	g.addAnswered(keys, into)
	g.holdValid = false
	if m.left > 0 {
		return nil
	}
	m.asked = nil
	g.advance(m.askedWM)
	if !m.busy() {
		g.advance(m.wantWM)
	}
	return nil
}

// heldWindows indexes the answered keys' custom windows by the bytes that
// name them to the SDK (nil for other windows). A custom window travels
// behind its max timestamp, which the SDK computes from the window in
// memory: with a window coder keeping less precision than the window
// (Python's TimestampCoder keeps milliseconds of microsecond times), the
// windows the SDK decoded and names in its answer carry another prefix than
// the elements did. The window coder's bytes behind the prefix are what the
// SDK decodes, so they name the window; several held windows may share them.
func (g *GBK) heldWindows(keys map[string]bool) map[string][][]byte {
	if g.s.window != coders.CustomWindows {
		return nil
	}
	m := g.winMerges
	held := map[string][][]byte{}
	note := func(key, win []byte) {
		id := string(appendID(nil, sdkName(win), key))
		if !slices.ContainsFunc(held[id], func(h []byte) bool { return bytes.Equal(h, win) }) {
			held[id] = append(held[id], win)
		}
	}
	for _, e := range m.waiting[:m.askedN] {
		if keys[string(e.key)] {
			note(e.key, e.win)
		}
	}
	for k := range keys {
		for _, w := range g.sessions[k] {
			note(w.key, w.win)
		}
	}
	return held
}

// sdkName is a custom window's bytes without its max-timestamp prefix.
func sdkName(win []byte) []byte {
	return win[min(coders.TimestampSize, len(win)):]
}

// asHeld replaces the windows the SDK named by the ones the GBK holds.
func asHeld(held map[string][][]byte, key []byte, named [][]byte) [][]byte {
	if held == nil {
		return named
	}
	var out [][]byte
	for _, o := range named {
		if hs, ok := held[string(appendID(nil, sdkName(o), key))]; ok {
			out = append(out, hs...)
		} else {
			out = append(out, o)
		}
	}
	return out
}

// mergeInto merges the key's open windows among mg.Originals into
// mg.Result, and notes where the waiting elements of each original go.
func (g *GBK) mergeInto(key []byte, mg WindowMerge, into map[string][]byte) error {
	start, maxTS, err := g.s.windowBounds(mg.Result)
	if err != nil {
		return fmt.Errorf("agg: bad merged window %x: %w", mg.Result, err)
	}
	var srcs []*winState
	for _, o := range mg.Originals {
		into[string(appendID(nil, o, key))] = mg.Result
		if w := g.wins[string(appendID(nil, o, key))]; w != nil && !w.closed {
			srcs = append(srcs, w)
		}
	}
	if len(srcs) == 0 {
		return nil // only waiting elements' windows: they go to the result
	}
	id := string(appendID(nil, mg.Result, key))
	old := g.wins[id]
	if len(srcs) == 1 && srcs[0] == old {
		return nil // merged into itself
	}
	if old != nil && !slices.Contains(srcs, old) {
		srcs = append(srcs, old) // the result is an open window the SDK did not list
	}
	// The result's state starts afresh, as a session's does when it grows:
	// the old window of that id, if any, is one of the sources.
	delete(g.wins, id)
	w := g.create(key, mg.Result, start, maxTS)
	g.sessions[string(w.key)] = append(g.sessions[string(w.key)], w)
	g.absorb(w, srcs)
	g.wins[id] = w // absorb forgot the old window of this id
	return nil
}

// addAnswered adds the elements of the answered keys that were waiting
// when the request went out to their merged (or own) windows, in arrival
// order, as one batch of input. Later ones wait for the next request.
func (g *GBK) addAnswered(keys map[string]bool, into map[string][]byte) {
	m := g.winMerges
	deferring := g.deferring
	g.deferring = true
	rest := m.waiting[:0]
	askedN := m.askedN
	m.minTS = coders.MaxTimestamp
	for i, e := range m.waiting {
		if i >= m.askedN || !keys[string(e.key)] {
			rest = append(rest, e)
			m.minTS = min(m.minTS, e.ts)
			continue
		}
		askedN--
		win := e.win
		if r, ok := into[string(appendID(nil, e.win, e.key))]; ok {
			win = r
		}
		g.addWindowMerged(e, win)
	}
	clear(m.waiting[len(rest):])
	m.waiting, m.askedN = rest, askedN
	if !deferring {
		g.EndInput()
	}
}

// addWindowMerged adds one element to its window after merging: it is dropped as
// late if that window expired meanwhile.
func (g *GBK) addWindowMerged(e waiting, win []byte) {
	start, maxTS, err := g.s.windowBounds(win)
	if err != nil || g.s.gcTime(maxTS) < g.wm {
		g.droppedLate++
		return
	}
	w := g.wins[string(appendID(nil, win, e.key))]
	if w == nil {
		w = g.create(e.key, win, start, maxTS)
		g.sessions[string(w.key)] = append(g.sessions[string(w.key)], w)
	}
	if w.closed {
		g.droppedClose++
		return
	}
	g.addTo(w, e.value, e.ts, env{wm: g.wm, now: e.arrival, arrival: e.arrival, maxTS: w.maxTS})
}
