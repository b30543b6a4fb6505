package agg

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/beam-runner/beam-runner/runner/coders"
)

// A combiner tree keeps a lifted combine's GroupByKey at about one
// accumulator per key and window, however large its input. The
// precombined accumulators it buffers merge associatively and
// commutatively, so rather than hold every one until its window closes,
// the GroupByKey hands partial groups of them (KV<key, iterable<accum>>,
// encoded as its output is) to the caller, who runs them through the
// SDK's merge-accumulators transform and puts each result back as one
// accumulator (AddCombined), which later passes may merge again. The
// runner never decodes an accumulator, so this is exact for every coder.
//
// While a window has combines in flight it does not fire, even once the
// watermark passed it: its pane waits for the combined accumulators
// (FinishCombine). Its watermark hold stays, since a window's hold only
// ever falls while it is pending, and a partial group goes out at its
// pane time, the least held output time of its accumulators, which the
// merged result comes back with; so the final pane's timestamp is what it
// would have been without the tree.

var errNoTree = errors.New("agg: combined accumulators put back into a GroupByKey without a combiner tree")

// Combine is one combine bundle of a pass: partial groups for the SDK to
// merge into one accumulator each.
type Combine struct {
	ID int
	// Input holds the partial groups as GroupByKey output elements, in
	// chunks of whole elements; Groups counts them. The combine puts back
	// one accumulator per group.
	Input  [][]byte
	Groups int
}

// combTree is a batch's combiner tree state.
type combTree struct {
	policy treePolicy
	load   treeLoad
	next   int                 // id of the next combine
	flight map[int][]*batchWin // windows each combine in flight holds open
}

func newTree(c CombineTree, spill bool, spillBudget int) *combTree {
	p := newTreePolicy(c)
	if spill {
		// Combine well before the spill would take the accumulators.
		p.passBytes = max(min(p.passBytes, spillBudget/4), 1)
	}
	return &combTree{policy: p, flight: map[int][]*batchWin{}}
}

// elemBytes is what one buffered value counts for the tree's policy.
func elemBytes(key, value []byte) int { return len(key) + len(value) + elemOverhead }

// TakeCombines returns the combines of a new pass when the tree's policy
// calls for one (none on GroupByKeys without a tree), their input in
// chunks of about chunkBytes. Each must come back through AddCombined and
// FinishCombine, or the windows it took from never fire.
func (g *GBK) TakeCombines(chunkBytes int) []Combine {
	if g.fast == nil || g.fast.tree == nil {
		return nil
	}
	ms := g.fast.takeCombines(chunkBytes)
	if len(ms) > 0 {
		g.holdValid = false
	}
	return ms
}

// AddCombined puts back one accumulator a combine produced: a value of the
// window at output time ts (the combine's input element's timestamp). It is
// not dropped as late, as its window waits for it. Key and value are
// copied.
func (g *GBK) AddCombined(key, window, value []byte, ts int64) error {
	if g.fast == nil || g.fast.tree == nil {
		return errNoTree
	}
	_, maxTS, err := g.s.windowBounds(window)
	if err != nil {
		return fmt.Errorf("agg: combined accumulator in bad window %x: %w", window, err)
	}
	g.holdValid = false
	g.fast.addCombined(key, window, value, ts, maxTS)
	return g.Err()
}

// FinishCombine records that combine id's results are all back: the windows
// it held fire now if the watermark passed them. An id not in flight is
// ignored, but due windows still fire: a restored GBK puts a requeued
// combine's input back with AddCombined and has no record of its id.
func (g *GBK) FinishCombine(id int) {
	if g.fast == nil || g.fast.tree == nil {
		return
	}
	g.holdValid = false
	b := g.fast
	for _, w := range b.tree.flight[id] {
		w.inflight--
	}
	delete(b.tree.flight, id)
	b.advance(b.wm)
}

// CombinesInFlight is the number of combines taken and not yet finished.
func (g *GBK) CombinesInFlight() int {
	if g.fast == nil || g.fast.tree == nil {
		return 0
	}
	return len(g.fast.tree.flight)
}

// takeCombines runs a pass over the pending windows the watermark has not
// passed, in window order: every key with enough accumulators goes to a
// combine, the others stay, copied out of the input chunks they referenced
// so those are released.
func (b *batch) takeCombines(chunkBytes int) []Combine {
	t := b.tree
	if !t.policy.due(t.load) {
		return nil
	}
	t.load = treeLoad{}
	c := &combineCutter{policy: t.policy, chunkBytes: chunkBytes}
	for _, w := range b.sortedWins() {
		if w.maxTS >= b.wm && w.count() > 0 {
			b.passWin(w, c)
		}
	}
	for i, m := range c.finish() {
		m.ID = t.next
		t.next++
		t.flight[m.ID] = c.wins[i]
		for _, w := range c.wins[i] {
			w.inflight++
		}
		c.out[i] = m
	}
	return c.out
}

func (b *batch) sortedWins() []*batchWin {
	ws := make([]*batchWin, 0, len(b.wins))
	for _, w := range b.wins {
		ws = append(ws, w)
	}
	slices.SortFunc(ws, func(x, y *batchWin) int { return bytes.Compare(x.win, y.win) })
	return ws
}

// passWin sends a window's groups with enough accumulators to c and keeps
// the rest, in a run of their own.
func (b *batch) passWin(w *batchWin, c *combineCutter) {
	// every run's accumulators take part, not only the newest block's
	var kept runWriter
	it := w.sorted(false)
	for g := it.nextGroup(); g != nil; g = it.nextGroup() {
		if !b.tree.policy.combines(len(g)) {
			for _, e := range g {
				kept.add(e)
				b.tree.load.kept += elemBytes(e.key, e.value)
			}
			continue
		}
		c.add(w, g)
		for _, e := range g {
			b.forget(e)
		}
	}
	w.runs = nil
	if r := kept.finish(); r != nil {
		w.runs = []*run{r}
	}
}

// forget uncounts a buffered value that left for a combine.
func (b *batch) forget(e batchElem) {
	b.pending--
	if b.spill != nil {
		b.spill.bytes = max(b.spill.bytes-elemBytes(e.key, e.value), 0)
	}
}

// addCombined buffers a combined accumulator as held at ts: it comes back at
// its group's pane time, which the window's hold already covers, and the
// final pane's time must count it even once the watermark passed it.
func (b *batch) addCombined(key, window, value []byte, ts, maxTS int64) {
	w := b.wins[string(window)]
	if w == nil {
		w = &batchWin{win: append([]byte(nil), window...), maxTS: maxTS, hold: coders.MaxTimestamp}
		b.wins[string(w.win)] = w
	}
	w.push(batchElem{prefix: keyPrefix(key), key: key, value: value, out: ts, held: true})
	w.next++
	w.hold = min(w.hold, ts)
	b.pending++
	b.tree.load.kept += elemBytes(key, value)
	if b.spill != nil && b.spill.note(key, value) {
		b.spillAll()
	}
}

// combineCutter packs a pass's groups into combines of about the policy's
// bundle size, each in chunks of about chunkBytes.
type combineCutter struct {
	policy     treePolicy
	chunkBytes int
	out        []Combine
	wins       [][]*batchWin // per combine, the windows it took from
	cur        []byte        // the chunk being filled
	size       int           // encoded bytes of the combine being filled
}

// add appends one group as a GroupByKey output element at its pane time.
func (c *combineCutter) add(w *batchWin, es []batchElem) {
	if len(c.out) == 0 || c.policy.full(c.size) {
		c.flushChunk()
		c.out = append(c.out, Combine{})
		c.wins = append(c.wins, nil)
		c.size = 0
	}
	i := len(c.out) - 1
	if ws := c.wins[i]; len(ws) == 0 || ws[len(ws)-1] != w {
		c.wins[i] = append(ws, w)
	}
	c.out[i].Groups++
	if len(c.cur) >= c.chunkBytes {
		c.flushChunk()
	}
	start := len(c.cur)
	c.cur = coders.AppendWindowedValueHeader(c.cur, paneTime(w, es), 1, w.win, coders.NoFiringPane)
	c.cur = append(c.cur, es[0].key...)
	c.cur = coders.AppendIterableHeader(c.cur, int32(len(es)))
	for _, e := range es {
		c.cur = append(c.cur, e.value...)
	}
	c.size += len(c.cur) - start
}

func (c *combineCutter) flushChunk() {
	if len(c.cur) > 0 {
		m := &c.out[len(c.out)-1]
		m.Input = append(m.Input, c.cur)
		c.cur = nil
	}
}

func (c *combineCutter) finish() []Combine {
	c.flushChunk()
	return c.out
}
