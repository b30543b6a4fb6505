package agg

import (
	"bytes"
	"encoding/binary"
	"slices"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/coders"
)

// batch is the GroupByKey fast path for what batch pipelines almost always
// use: the default trigger, no allowed lateness, non-merging windows. There
// every (key, window) fires exactly once, when the watermark passes the end
// of the window, with one ON_TIME pane that is first and last; elements for
// an expired window are dropped. Nothing else can happen, so no per-key
// trigger state, timers or copies are needed: elements are kept as
// references into the caller's (immutable) input, per window, and grouped by
// sorting when the window is due. This is what the general machine computes
// for that configuration (see TestBatchMatchesMachine).
type batch struct {
	s       *settings
	wins    map[string]*batchWin // pending windows by window bytes
	due     []*batchWin          // fired, waiting for Fire
	pending int                  // elements buffered in pending windows
	spill   *spiller             // nil: values stay in memory
	tree    *combTree            // a lifted combine's combiner tree (tree.go), or nil
	wm      int64                // the input watermark of the last advance
}

// batchWin is one window's buffered elements.
type batchWin struct {
	win   []byte
	maxTS int64
	hold  int64 // least output time of the held elements (conservative)
	// blk holds the newest elements, copied as they come, in arrival
	// order; every block is sealed into a run (runs.go). runs are in
	// arrival order.
	blk  block
	runs []*run
	next uint32 // arrival number of the next value, across spills
	// spilled: some of the window's values are in the spill, so its panes
	// are read back from there.
	spilled bool
	// iter reads a due window's panes, from where the last call stopped
	// (a budgeted FireEncoded stops between panes); nil before the first.
	iter *mergeIter
	// readFrom is where a spilled due window's read goes on (readWin):
	// the spill key of the next key's first value; nil before the first.
	// memGroup is the next group of its values in memory, from iter.
	readFrom []byte
	memGroup []batchElem
	// inflight counts the combines (tree.go) holding the window open.
	inflight int
}

// batchElem is one value as the batch path hands it around: being added,
// read from a run or read back from the spill.
type batchElem struct {
	prefix uint64 // first 8 key bytes, big-endian: most comparisons stop here
	key    []byte
	value  []byte
	out    int64 // output time, if held
	held   bool
}

// batchEligible reports whether cfg's GBK can use the fast path.
func batchEligible(s *settings, cfg Config) bool {
	// LATEST_IN_PANE holds at the least over keys of each key's latest
	// time, which needs per-key state: left to the general machine.
	if s.merging || s.lateness != 0 || s.outputTime == pipepb.OutputTime_LATEST_IN_PANE {
		return false
	}
	if t := cfg.Trigger; t != nil && t.GetDefault() == nil {
		return false
	}
	return true
}

func newBatch(s *settings) *batch {
	return &batch{s: s, wins: map[string]*batchWin{}, wm: coders.MinTimestamp}
}

// add buffers a copy of a value. wm is the GBK's input watermark.
func (b *batch) add(key, window, value []byte, ts, wm, maxTS int64) {
	w := b.wins[string(window)]
	if w == nil {
		w = &batchWin{win: append([]byte(nil), window...), maxTS: maxTS, hold: coders.MaxTimestamp}
		b.wins[string(w.win)] = w
	}
	e := batchElem{prefix: keyPrefix(key), key: key, value: value}
	w.next++
	// As GBK.addHold: an output time behind the watermark is not held.
	out := ts
	if b.s.outputTime == pipepb.OutputTime_END_OF_WINDOW {
		out = maxTS
	}
	if out >= wm {
		e.out, e.held = out, true
		w.hold = min(w.hold, out)
	}
	w.push(e)
	b.pending++
	if b.tree != nil {
		b.tree.load.fresh += elemBytes(key, value)
	}
	if b.spill != nil && b.spill.note(key, value) {
		b.spillAll()
	}
}

// A block is a window's newest elements: their keys and values copied
// into one arena, and a record of each with offsets into it, so nothing in
// it points into the input they came in (which is released at once) and
// the collector has nothing in it to scan. Sealing sorts the records and
// writes the run.
type block struct {
	arena []byte
	recs  []blockRec
}

type blockRec struct {
	prefix          uint64 // first 8 key bytes, big-endian
	out             int64  // output time, if held
	off, klen, vlen uint32 // key at arena[off:], value after it
	held            bool
}

// elemBlock and blockBytes bound a block: enough that sorting it and
// merging the runs is cheap, small enough that it stays a few MiB (64k
// records of 32 bytes, and their values).
const (
	elemBlock  = 1 << 16
	blockBytes = 8 << 20
)

// push appends e to the newest elements, copying its key and value,
// sealing them once a block is full.
func (w *batchWin) push(e batchElem) {
	b := &w.blk
	off := len(b.arena)
	b.arena = append(append(b.arena, e.key...), e.value...)
	b.recs = append(b.recs, blockRec{prefix: e.prefix, out: e.out, held: e.held,
		off: uint32(off), klen: uint32(len(e.key)), vlen: uint32(len(e.value))})
	if len(b.recs) >= elemBlock || len(b.arena) >= blockBytes {
		w.seal()
	}
}

func (b *block) elem(r *blockRec) batchElem {
	k := b.arena[r.off : r.off+r.klen : r.off+r.klen]
	end := r.off + r.klen + r.vlen
	return batchElem{prefix: r.prefix, key: k, value: b.arena[r.off+r.klen : end : end], out: r.out, held: r.held}
}

// seal moves the newest elements into a run of their own, sorted by key
// and, within a key, by arrival (arena order); the block is kept for the
// next elements, unless one huge value grew it.
func (w *batchWin) seal() {
	b := &w.blk
	if len(b.recs) == 0 {
		return
	}
	slices.SortFunc(b.recs, func(x, y blockRec) int {
		if x.prefix != y.prefix {
			if x.prefix < y.prefix {
				return -1
			}
			return 1
		}
		if c := bytes.Compare(b.arena[x.off:x.off+x.klen], b.arena[y.off:y.off+y.klen]); c != 0 {
			return c
		}
		return int(x.off) - int(y.off)
	})
	total := 0
	for i := range b.recs {
		total += entrySize(b.elem(&b.recs[i]))
	}
	rw := runWriter{left: total}
	for i := range b.recs {
		rw.add(b.elem(&b.recs[i]))
	}
	w.runs = append(w.runs, rw.finish())
	b.recs, b.arena = b.recs[:0], b.arena[:0]
	if cap(b.arena) > 2*blockBytes {
		b.arena = nil
	}
}

// count is how many elements w holds in memory.
func (w *batchWin) count() int {
	n := len(w.blk.recs)
	for _, r := range w.runs {
		n += r.n
	}
	return n
}

// sorted seals w and returns an iterator over all its elements in key
// order, which drops each run's chunks as it reads past them if release.
func (w *batchWin) sorted(release bool) *mergeIter {
	w.seal()
	return newMergeIter(w.runs, release)
}

// drop forgets w's in-memory elements.
func (w *batchWin) drop() {
	w.blk, w.runs = block{}, nil
}

// spillAll moves every pending window's values to the spill, in window
// order so runs are written deterministically.
func (b *batch) spillAll() {
	ws := make([]*batchWin, 0, len(b.wins))
	for _, w := range b.wins {
		ws = append(ws, w)
	}
	slices.SortFunc(ws, func(x, y *batchWin) int { return bytes.Compare(x.win, y.win) })
	for _, w := range ws {
		b.pending -= w.count()
		b.spill.spillWin(w)
	}
	b.spill.bytes = 0
}

func keyPrefix(k []byte) uint64 {
	if len(k) >= 8 {
		return binary.BigEndian.Uint64(k)
	}
	var p [8]byte
	copy(p[:], k)
	return binary.BigEndian.Uint64(p[:])
}

// advance moves windows whose end the watermark passed to due, ordered by
// end, then window bytes (as the general machine orders them); a window
// that combines hold open waits for them (FinishCombine).
func (b *batch) advance(wm int64) {
	b.wm = max(b.wm, wm)
	start := len(b.due)
	for k, w := range b.wins {
		if w.maxTS < wm && w.inflight == 0 {
			b.due = append(b.due, w)
			delete(b.wins, k)
			b.pending -= w.count()
		}
	}
	slices.SortFunc(b.due[start:], func(x, y *batchWin) int {
		if x.maxTS != y.maxTS {
			if x.maxTS < y.maxTS {
				return -1
			}
			return 1
		}
		return bytes.Compare(x.win, y.win)
	})
}

// hold is the least output time a pending window may still produce: a
// lower bound of the general machine's per-key holds.
func (b *batch) hold() int64 {
	h := b.dueHold()
	for _, w := range b.wins {
		h = min(h, w.hold, w.maxTS)
	}
	return h
}

func (b *batch) done() bool { return len(b.wins) == 0 && len(b.due) == 0 }

// eachPane calls f for every pane of the due windows, in order, and
// forgets them, until f asks to stop (returns false); the next call goes on
// from there. vals are the pane's values in arrival order. With allowHot,
// a key read back from the spill whose values pass the hot budget gets
// only its first values in vals, the rest in pages named by hot (hot.go);
// otherwise hot is always nil.
func (b *batch) eachPane(allowHot bool, f func(key, win []byte, vals []batchElem, ts int64, hot []byte) bool) {
	for len(b.due) > 0 {
		w := b.due[0]
		if w.spilled {
			done := b.spill.readWin(w, allowHot, func(es []batchElem, hot *hotRun) bool {
				ts := paneTime(w, es)
				var token []byte
				if hot != nil {
					ts, token = min(ts, hot.ts), hot.token
				}
				return f(es[0].key, w.win, es, ts, token)
			})
			if !done {
				return
			}
		} else if !b.eachWinPane(w, f) {
			return
		}
		b.due[0] = nil // release the input it references
		b.due = b.due[1:]
	}
	b.due = nil
}

// eachWinPane hands out the panes of an in-memory window from where the
// last call stopped; false if f stopped it before the end.
func (b *batch) eachWinPane(w *batchWin, f func(key, win []byte, vals []batchElem, ts int64, hot []byte) bool) bool {
	if w.iter == nil {
		w.iter = w.sorted(true)
	}
	for es := w.iter.nextGroup(); es != nil; es = w.iter.nextGroup() {
		if !f(es[0].key, w.win, es, paneTime(w, es), nil) {
			return w.iter.done()
		}
	}
	w.drop()
	return true
}

// dueHold is the least timestamp the due panes not yet handed out carry.
func (b *batch) dueHold() int64 {
	h := coders.MaxTimestamp
	for _, w := range b.due {
		h = min(h, w.hold, w.maxTS)
	}
	return h
}

// paneTime is a pane's timestamp: the least held output time of its
// values, at most the window's end.
func paneTime(w *batchWin, es []batchElem) int64 {
	ts := w.maxTS
	for _, e := range es {
		if e.held {
			ts = min(ts, e.out)
		}
	}
	return ts
}

// onTimePane is the only pane the fast path produces.
var onTimePane = coders.PaneInfo{IsFirst: true, IsLast: true, Timing: coders.TimingOnTime, Index: 0, OnTimeIndex: 0}

// appendPanes encodes the due panes as GroupByKey output elements into
// chunks of at most about chunk bytes each (a pane larger than that gets a
// chunk of its own).
func (b *batch) appendPanes(chunk int) [][]byte {
	var out [][]byte
	b.emitPanes(chunk, func(c []byte) { out = append(out, c) })
	return out
}

// emitPanes is appendPanes handing each chunk to emit as soon as it is
// full, so a window read back from the spill never sits in memory whole.
func (b *batch) emitPanes(chunk int, emit func([]byte)) { b.emitPanesUpTo(chunk, -1, emit) }

// emitPanesUpTo is emitPanes stopping after the pane that brings what it
// emitted to budget bytes (budget < 0: no limit).
func (b *batch) emitPanesUpTo(chunk, budget int, emit func([]byte)) {
	var cur []byte
	sent := 0
	b.eachPane(true, func(key, win []byte, vals []batchElem, ts int64, hot []byte) bool {
		size := 8 + 4 + len(win) + 1 + len(key) + 4 + 2*binaryMaxVarint + len(hot)
		for _, v := range vals {
			size += len(v.value)
		}
		if len(cur) > 0 && len(cur)+size > chunk {
			emit(cur)
			cur = nil
		}
		if cur == nil {
			cur = make([]byte, 0, max(chunk, size))
		}
		cur = coders.AppendWindowedValueHeader(cur, ts, 1, win, onTimePane)
		cur = append(cur, key...)
		if hot == nil {
			cur = coders.AppendIterableHeader(cur, int32(len(vals)))
		} else {
			// Beam's state-backed form: one chunk of values, then -1 and
			// the token the SDK reads the rest with (StateKey.Runner).
			cur = coders.AppendVarint(coders.AppendIterableHeader(cur, -1), int64(len(vals)))
		}
		for _, v := range vals {
			cur = append(cur, v.value...)
		}
		if hot != nil {
			cur = coders.AppendLengthPrefixed(coders.AppendVarint(cur, -1), hot)
		}
		sent += size
		return budget < 0 || sent < budget
	})
	if len(cur) > 0 {
		emit(cur)
	}
}

// binaryMaxVarint is the most bytes a varint takes.
const binaryMaxVarint = 10

// panes returns the due panes as Pane values (copying value lists).
func (b *batch) panes() []Pane {
	var out []Pane
	b.eachPane(false, func(key, win []byte, vals []batchElem, ts int64, _ []byte) bool {
		vs := make([][]byte, len(vals))
		for i, v := range vals {
			vs[i] = v.value
		}
		out = append(out, Pane{Key: key, Window: win, Values: vs, Timestamp: ts, Info: onTimePane})
		return true
	})
	return out
}
