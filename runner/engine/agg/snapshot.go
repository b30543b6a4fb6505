package agg

import (
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/runner/internal/wire"
)

// snapshotVersion is the format of a GBK's snapshot section. Bump it when
// the fields below change, and keep reading the old versions.
const snapshotVersion = 1

// Snapshot appends the GBK's whole state: times, drop counters, buffered
// values, trigger state, pane indices, merged sessions, armed timers and
// the windows a deferred batch of input (BeginInput) reached.
// It must be taken when every produced pane has been taken by Fire or
// FireEncoded (the engine drains panes after every call), so panes in
// flight are never part of a snapshot. The configuration is not written:
// the restoring side passes the same Config to Restore.
func (g *GBK) Snapshot(w *wire.Writer) error { return g.SnapshotUncombined(w, nil) }

// Uncombined is an accumulator that a combine of the combiner tree took and
// has not put back, as the combine's input holds it.
type Uncombined struct {
	Key, Window, Value []byte
	TS                 int64 // the partial group's timestamp
}

// SnapshotUncombined is Snapshot of a GBK whose combiner tree has combines
// taken and not finished: the caller, who holds their input, gives their
// accumulators back, and they are written as buffered values of their
// windows, as AddCombined would add them. So the format is Snapshot's, and
// a restored GBK combines them again (a window the watermark passed fires
// with them once restored).
func (g *GBK) SnapshotUncombined(w *wire.Writer, back []Uncombined) error {
	if err := g.snapshotable(back); err != nil {
		return err
	}
	w.Uint(snapshotVersion)
	w.Bool(g.fast != nil)
	w.Int(g.wm)
	w.Int(g.now)
	w.Int(g.droppedLate)
	w.Int(g.droppedClose)
	w.Bool(g.deferring)
	if g.fast != nil {
		return g.fast.snapshot(w, back)
	}
	g.snapshotWindows(w)
	return nil
}

// snapshotable refuses a snapshot at a point a restore could not resume.
func (g *GBK) snapshotable(back []Uncombined) error {
	if len(g.out) > 0 || (g.fast != nil && len(g.fast.due) > 0) {
		return fmt.Errorf("agg: snapshot with panes not yet taken by Fire")
	}
	if n := g.CombinesInFlight(); n > 0 && len(back) == 0 {
		return fmt.Errorf("agg: snapshot with %d combines of the combiner tree in flight and none of their accumulators", n)
	}
	if len(back) > 0 && g.fast == nil {
		return errNoTree
	}
	if g.fast != nil && g.fast.hasSpilled() {
		// Spilled values live in the store, not in the snapshot: a
		// checkpoint must reference them there, which is not built yet.
		return fmt.Errorf("agg: snapshot of a GroupByKey with values spilled to the store is not supported")
	}
	if g.winMerges != nil && g.winMerges.busy() {
		// The request out is not part of the state: taken only between merges.
		return fmt.Errorf("agg: snapshot while windows wait for the SDK to merge them")
	}
	return nil
}

// snapshotWindows writes the general path's windows, sessions, timers and
// deferred windows.
func (g *GBK) snapshotWindows(w *wire.Writer) {
	wins := g.sortedWins()
	index := make(map[*winState]int, len(wins))
	w.Len(len(wins))
	for i, ws := range wins {
		index[ws] = i
		ws.snapshot(w)
	}
	keys := slices.Sorted(maps.Keys(g.sessions))
	w.Len(len(keys))
	for _, k := range keys {
		w.String(k)
		w.Len(len(g.sessions[k]))
		for _, ws := range g.sessions[k] {
			w.Num(index[ws])
		}
	}
	snapshotTimers(w, g.eventTimers, liveEvent, index)
	snapshotTimers(w, g.procTimers, liveProc, index)
	// The windows a deferred batch of input reached, in order; dead ones
	// are skipped by EndInput, so they are left out.
	var dirty []int
	for _, ws := range g.dirty {
		if !ws.dead {
			dirty = append(dirty, index[ws])
		}
	}
	w.Len(len(dirty))
	for _, i := range dirty {
		w.Num(i)
	}
}

// sortedWins lists the live windows by id, for a deterministic encoding.
func (g *GBK) sortedWins() []*winState {
	out := make([]*winState, 0, len(g.wins))
	for _, ws := range g.wins {
		out = append(out, ws)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

func (ws *winState) snapshot(w *wire.Writer) {
	w.Blob(ws.key)
	w.Blob(ws.win)
	w.Int(ws.start)
	w.Int(ws.maxTS)
	w.Uint(uint64(ws.gen))
	w.Blob(ws.data)
	w.Len(len(ws.ends))
	for _, e := range ws.ends {
		w.Num(e)
	}
	w.Num(ws.newCount)
	w.Int(ws.hold)
	w.Bool(ws.hasHold)
	w.Int(ws.index)
	w.Int(ws.nonEarly)
	w.Bool(ws.lateBirth)
	w.Bool(ws.eowDone)
	w.Int(ws.ptAt)
	w.Bool(ws.ptSet)
	w.Uint(uint64(ws.ptGen))
	w.Bool(ws.closed)
	w.Len(len(ws.trig))
	for _, n := range ws.trig {
		w.Int(n.count)
		w.Int(n.at)
		w.Bool(n.armed)
		w.Bool(n.finished)
		w.Bool(n.late)
	}
}

// snapshotTimers writes the live timers in a canonical order (the heap's
// order, then generation, then window). A stale timer (its window dead or
// rescheduled) never becomes live again and is skipped when popped, so it
// is left out: which stale entries a heap still holds depends on its
// history, and equal states must encode equally. A sorted array is a valid
// heap, so restoring pushes the timers back without reordering.
func snapshotTimers(w *wire.Writer, h timerHeap, live func(timer) bool, index map[*winState]int) {
	var ts []timer
	for _, t := range h {
		if live(t) {
			ts = append(ts, t)
		}
	}
	sortTimers(ts, index)
	w.Len(len(ts))
	for _, t := range ts {
		w.Int(t.at)
		w.Num(index[t.w])
		w.Uint(uint64(t.gen))
	}
}

func sortTimers(ts []timer, index map[*winState]int) {
	h := timerHeap(ts)
	sort.SliceStable(ts, func(i, j int) bool {
		if h.Less(i, j) || h.Less(j, i) {
			return h.Less(i, j)
		}
		if ts[i].gen != ts[j].gen {
			return ts[i].gen < ts[j].gen
		}
		return index[ts[i].w] < index[ts[j].w]
	})
}

func (b *batch) hasSpilled() bool {
	for _, bw := range b.wins {
		if bw.spilled {
			return true
		}
	}
	return false
}

func (b *batch) snapshot(w *wire.Writer, back []Uncombined) error {
	extra := map[string][]Uncombined{}
	for _, u := range back {
		extra[string(u.Window)] = append(extra[string(u.Window)], u)
	}
	keys := slices.Sorted(maps.Keys(b.wins))
	for k := range extra {
		if b.wins[k] == nil {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	w.Len(len(keys))
	for _, k := range keys {
		bw := b.wins[k]
		if bw == nil {
			_, maxTS, err := b.s.windowBounds([]byte(k))
			if err != nil {
				return fmt.Errorf("agg: uncombined accumulator in bad window %x: %w", k, err)
			}
			bw = &batchWin{win: []byte(k), maxTS: maxTS, hold: coders.MaxTimestamp}
		}
		hold := bw.hold
		for _, u := range extra[k] {
			hold = min(hold, u.TS)
		}
		w.Blob(bw.win)
		w.Int(bw.maxTS)
		w.Int(hold)
		w.Len(bw.count() + len(extra[k]))
		bw.sorted(false).each(func(e batchElem) {
			w.Blob(e.key)
			w.Blob(e.value)
			w.Int(e.out)
			w.Bool(e.held)
		})
		for _, u := range extra[k] {
			w.Blob(u.Key)
			w.Blob(u.Value)
			w.Int(u.TS)
			w.Bool(true)
		}
	}
	return nil
}

// Restore rebuilds a GBK for cfg from what Snapshot wrote. The error names
// what in the snapshot does not fit cfg or is malformed.
func Restore(cfg Config, r *wire.Reader) (*GBK, error) {
	g, err := New(cfg)
	if err != nil {
		return nil, err
	}
	if v := r.Uint(); r.Err() == nil && v != snapshotVersion {
		return nil, fmt.Errorf("agg: snapshot section version %d, this runner reads version %d", v, snapshotVersion)
	}
	if fast := r.Bool(); r.Err() == nil && fast != (g.fast != nil) {
		return nil, fmt.Errorf("agg: snapshot was taken with a different windowing configuration (fast path %v, now %v)", fast, g.fast != nil)
	}
	g.wm, g.now = r.Int(), r.Int()
	g.droppedLate, g.droppedClose = r.Int(), r.Int()
	g.deferring = r.Bool()
	if g.fast != nil {
		g.fast.restore(r)
		// Windows the watermark passed are pending only if a combiner
		// tree's combines held them open; their accumulators are back.
		g.fast.advance(g.wm)
	} else {
		g.restoreMachine(r)
	}
	if r.Err() != nil {
		return nil, fmt.Errorf("agg: restoring: %w", r.Err())
	}
	return g, nil
}

func (g *GBK) restoreMachine(r *wire.Reader) {
	wins := make([]*winState, r.Len())
	for i := range wins {
		ws := g.restoreWin(r)
		if r.Err() != nil {
			return
		}
		if g.wins[ws.id] != nil {
			r.Failf("window %x of key %x twice", ws.win, ws.key)
			return
		}
		wins[i] = ws
		g.wins[ws.id] = ws
		if !ws.closed {
			g.open++
		}
	}
	win := func() *winState {
		i := r.Num()
		if r.Err() == nil && i >= len(wins) {
			r.Failf("window index %d of %d", i, len(wins))
		}
		if r.Err() != nil {
			return nil
		}
		return wins[i]
	}
	for n := r.Len(); n > 0 && r.Err() == nil; n-- {
		k := r.String()
		for m := r.Len(); m > 0 && r.Err() == nil; m-- {
			if ws := win(); ws != nil {
				g.sessions[k] = append(g.sessions[k], ws)
			}
		}
	}
	for _, h := range []*timerHeap{&g.eventTimers, &g.procTimers} {
		for n := r.Len(); n > 0 && r.Err() == nil; n-- {
			at := r.Int()
			ws := win()
			gen := r.Uint()
			if ws != nil {
				h.add(at, ws, uint32(gen))
			}
		}
	}
	for n := r.Len(); n > 0 && r.Err() == nil; n-- {
		if ws := win(); ws != nil {
			if ws.dirty {
				r.Failf("window %x of key %x is twice in the deferred batch", ws.win, ws.key)
			}
			ws.dirty = true
			g.dirty = append(g.dirty, ws)
		}
	}
}

func (g *GBK) restoreWin(r *wire.Reader) *winState {
	ws := &winState{key: r.Blob(), win: r.Blob(), start: r.Int(), maxTS: r.Int(), gen: uint32(r.Uint())}
	ws.id = string(appendID(nil, ws.win, ws.key))
	ws.data = r.Blob()
	ws.ends = make([]int, r.Len())
	prev := 0
	for i := range ws.ends {
		ws.ends[i] = r.Num()
		if r.Err() == nil && (ws.ends[i] < prev || ws.ends[i] > len(ws.data)) {
			r.Failf("value end %d outside [%d, %d]", ws.ends[i], prev, len(ws.data))
		}
		prev = ws.ends[i]
	}
	if len(ws.ends) == 0 {
		ws.ends = nil
	}
	ws.newCount = r.Num()
	ws.hold, ws.hasHold = r.Int(), r.Bool()
	ws.index, ws.nonEarly = r.Int(), r.Int()
	ws.lateBirth, ws.eowDone = r.Bool(), r.Bool()
	ws.ptAt, ws.ptSet, ws.ptGen = r.Int(), r.Bool(), uint32(r.Uint())
	ws.closed = r.Bool()
	n := r.Len()
	if r.Err() == nil && n != g.s.trig.size && !(ws.closed && n == 0) {
		r.Failf("window has %d trigger states, the trigger has %d", n, g.s.trig.size)
		return ws
	}
	if n > 0 {
		ws.trig = make([]nstate, n)
	}
	for i := range ws.trig {
		ws.trig[i] = nstate{count: r.Int(), at: r.Int(), armed: r.Bool(), finished: r.Bool(), late: r.Bool()}
	}
	return ws
}

func (b *batch) restore(r *wire.Reader) {
	for n := r.Len(); n > 0 && r.Err() == nil; n-- {
		bw := &batchWin{win: r.Blob(), maxTS: r.Int(), hold: r.Int()}
		m := r.Len()
		for i := 0; i < m && r.Err() == nil; i++ {
			e := batchElem{key: r.Blob(), value: r.Blob(), out: r.Int(), held: r.Bool()}
			e.prefix = keyPrefix(e.key)
			bw.push(e)
		}
		bw.next = uint32(bw.count()) // arrival numbers go on after the restored ones
		if b.wins[string(bw.win)] != nil {
			r.Failf("fast-path window %x twice", bw.win)
		}
		b.wins[string(bw.win)] = bw
		b.pending += bw.count()
	}
}
