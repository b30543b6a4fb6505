package agg

import (
	"bytes"
	"container/heap"
	"encoding/binary"
)

// A run is a sealed block of a window's elements: sorted by key (arrival
// order within a key) and copied into a few chunks of encoded bytes, with
// no per-element record or pointer. A window keeps its newest elements as
// references into the input they arrived in (batchElem) and seals them into
// a run every elemBlock elements, which releases that input; a window's
// panes are then a merge of its runs, which drops each chunk once read.
// So a window holds about its encoded keys and values, once, and the
// garbage collector has nothing in it to scan.
//
// An entry is a flag byte (1: the output time is held, and a varint of it
// follows), then the key and the value, each after a uvarint length.
type run struct {
	chunks [][]byte
	n      int // entries
}

// runChunk bounds a run's chunks, so a read run gives memory back as it
// goes.
const runChunk = 1 << 20

// runWriter writes a run from elements given in order. left, if known, is
// how many bytes are still to come (entrySize's bound), so chunks are
// sized to them; otherwise chunks grow from runChunkStart.
type runWriter struct {
	r    run
	cur  []byte
	left int
	grow int
}

const runChunkStart = 64 << 10

func (w *runWriter) add(e batchElem) {
	size := entrySize(e)
	if len(w.cur)+size > cap(w.cur) {
		w.flush()
		c := w.left
		if c <= 0 {
			w.grow = min(max(2*w.grow, runChunkStart), runChunk)
			c = w.grow
		}
		w.cur = make([]byte, 0, max(min(c, runChunk), size))
	}
	w.cur = appendEntry(w.cur, e)
	w.left -= size
	w.r.n++
}

func (w *runWriter) flush() {
	if len(w.cur) > 0 {
		w.r.chunks = append(w.r.chunks, w.cur)
		w.cur = nil
	}
}

// finish returns the run written, or nil if it is empty.
func (w *runWriter) finish() *run {
	w.flush()
	if w.r.n == 0 {
		return nil
	}
	r := w.r
	return &r
}

func entrySize(e batchElem) int {
	return 1 + binary.MaxVarintLen64 + 2*binary.MaxVarintLen32 + len(e.key) + len(e.value)
}

func appendEntry(dst []byte, e batchElem) []byte {
	if e.held {
		dst = binary.AppendVarint(append(dst, 1), e.out)
	} else {
		dst = append(dst, 0)
	}
	dst = append(binary.AppendUvarint(dst, uint64(len(e.key))), e.key...)
	return append(binary.AppendUvarint(dst, uint64(len(e.value))), e.value...)
}

// decodeEntry reads the entry at the start of b (which this package
// wrote) and returns its length.
func decodeEntry(b []byte) (batchElem, int) {
	var e batchElem
	i := 1
	if b[0] == 1 {
		out, n := binary.Varint(b[i:])
		e.out, e.held, i = out, true, i+n
	}
	kl, n := binary.Uvarint(b[i:])
	i += n
	e.key = b[i : i+int(kl) : i+int(kl)]
	i += int(kl)
	vl, n := binary.Uvarint(b[i:])
	i += n
	e.value = b[i : i+int(vl) : i+int(vl)]
	e.prefix = keyPrefix(e.key)
	return e, i + int(vl)
}

// runIter reads one run in order; cur is its next entry while ok.
type runIter struct {
	r       *run
	idx     int // the run's place in its window: the older run's values come first
	ci, off int
	cur     batchElem
	ok      bool
}

func (it *runIter) advance() {
	for it.ci < len(it.r.chunks) && it.off >= len(it.r.chunks[it.ci]) {
		it.ci, it.off = it.ci+1, 0
	}
	if it.ci >= len(it.r.chunks) {
		it.ok = false
		return
	}
	e, n := decodeEntry(it.r.chunks[it.ci][it.off:])
	it.cur, it.ok = e, true
	it.off += n
}

// mergeIter yields a window's elements from its runs in key order, a key's
// values in arrival order, one key's group at a time.
type mergeIter struct {
	h       iterHeap
	spent   []*runIter  // runs read to their end, released on the next call
	group   []batchElem // reused: valid until the next call of nextGroup
	release bool        // drop each run's chunks once read past
}

func newMergeIter(runs []*run, release bool) *mergeIter {
	m := &mergeIter{release: release}
	for i, r := range runs {
		it := &runIter{r: r, idx: i}
		it.advance()
		if it.ok {
			m.h = append(m.h, it)
		}
	}
	heap.Init(&m.h)
	return m
}

func (m *mergeIter) done() bool { return len(m.h) == 0 }

// nextGroup returns the values of the next key (nil after the last). With
// release, chunks read past before this call are dropped: the previous
// group's values must not be needed any more, except as slices already
// taken from them.
func (m *mergeIter) nextGroup() []batchElem {
	if m.release {
		for _, it := range m.h {
			clear(it.r.chunks[:it.ci])
		}
		for _, it := range m.spent {
			clear(it.r.chunks)
		}
		m.spent = m.spent[:0]
	}
	m.group = m.group[:0]
	if len(m.h) == 0 {
		return nil
	}
	first := m.h[0].cur
	for len(m.h) > 0 && sameKey(m.h[0].cur, first) {
		it := m.h[0]
		m.group = append(m.group, it.cur)
		if it.advance(); it.ok {
			heap.Fix(&m.h, 0)
		} else {
			m.spent = append(m.spent, heap.Pop(&m.h).(*runIter))
		}
	}
	return m.group
}

// each calls f for every element, in order.
func (m *mergeIter) each(f func(e batchElem)) {
	for g := m.nextGroup(); g != nil; g = m.nextGroup() {
		for _, e := range g {
			f(e)
		}
	}
}

func sameKey(a, b batchElem) bool {
	return a.prefix == b.prefix && bytes.Equal(a.key, b.key)
}

type iterHeap []*runIter

func (h iterHeap) Len() int { return len(h) }
func (h iterHeap) Less(i, j int) bool {
	a, b := &h[i].cur, &h[j].cur
	if a.prefix != b.prefix {
		return a.prefix < b.prefix
	}
	if c := bytes.Compare(a.key, b.key); c != 0 {
		return c < 0
	}
	return h[i].idx < h[j].idx
}
func (h iterHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *iterHeap) Push(x any)   { *h = append(*h, x.(*runIter)) }
func (h *iterHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	*h = old[:len(old)-1]
	return it
}
