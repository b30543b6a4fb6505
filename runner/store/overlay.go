package store

import (
	"bytes"
	"container/heap"
	"slices"
)

// overlay is what queued ops make of the keys with a prefix, read in key
// order without copying them: a merge of the write ops' runs (the newest
// op's value wins a key), less the keys a later delete dropped. A read
// lays it over the disk's scan; the queued bytes are all it holds, so a
// scan of a large queue costs a cursor per op, not a copy of the queue.
type overlay struct {
	runs runHeap
	dels []queuedDel // the deletes covering keys with the prefix
	// key, val and age are the current entry (age: its op's place in the
	// queue); ok is false once the runs are exhausted.
	key, val []byte
	age      int
	ok       bool
}

type queuedDel struct {
	prefix []byte
	age    int
}

// run is one write op's keys with the prefix, in key order.
type run struct {
	op    *spillOp
	age   int
	order []int // the op's indexes to read, in key order
	pos   int
}

func (r *run) key() []byte { return r.op.keys[r.order[r.pos]] }

// newOverlay reads ops' keys with prefix from the first at or after from
// (nil: the prefix's first).
func newOverlay(ops []*spillOp, prefix, from []byte) *overlay {
	o := &overlay{}
	for age, op := range ops {
		if op.del != nil {
			if bytes.HasPrefix(op.del, prefix) || bytes.HasPrefix(prefix, op.del) {
				o.dels = append(o.dels, queuedDel{prefix: op.del, age: age})
			}
			continue
		}
		if order := op.indexes(prefix, from); len(order) > 0 {
			o.runs = append(o.runs, &run{op: op, age: age, order: order})
		}
	}
	heap.Init(&o.runs)
	o.next()
	return o
}

// indexes lists the op's keys with prefix at or after from, in key order.
func (op *spillOp) indexes(prefix, from []byte) []int {
	if bytes.Compare(from, prefix) < 0 {
		from = prefix
	}
	lo, hi := 0, len(op.keys)
	if op.sorted {
		lo, _ = slices.BinarySearchFunc(op.keys, from, bytes.Compare)
		if end := prefixEnd(prefix); end != nil {
			hi, _ = slices.BinarySearchFunc(op.keys, end, bytes.Compare)
		}
	}
	var order []int
	for i := lo; i < hi; i++ {
		if bytes.HasPrefix(op.keys[i], prefix) && bytes.Compare(op.keys[i], from) >= 0 {
			order = append(order, i)
		}
	}
	if !op.sorted { // the last write of a key within one op wins: stable
		slices.SortStableFunc(order, func(a, b int) int { return bytes.Compare(op.keys[a], op.keys[b]) })
	}
	return order
}

// next moves to the overlay's next key: the newest write of the least
// key left, gone or not. Deleted keys are still entries, so that the
// disk's copy of them stays hidden.
func (o *overlay) next() {
	o.ok = len(o.runs) > 0
	if !o.ok {
		return
	}
	top := o.runs[0]
	o.key, o.age = top.key(), -1
	for len(o.runs) > 0 && bytes.Equal(o.runs[0].key(), o.key) {
		r := o.runs[0]
		if r.age >= o.age { // a run's own later duplicate wins too
			o.val, o.age = r.op.vals[r.order[r.pos]], r.age
		}
		if r.pos++; r.pos == len(r.order) {
			heap.Pop(&o.runs)
		} else {
			heap.Fix(&o.runs, 0)
		}
	}
}

// gone reports whether a delete queued after age covers k (age -1: the
// disk's copy, older than every op).
func (o *overlay) gone(k []byte, age int) bool {
	for _, d := range o.dels {
		if d.age > age && bytes.HasPrefix(k, d.prefix) {
			return true
		}
	}
	return false
}

// merge calls fn for every key of the overlay and of the disk's scan (the
// overlay's winning), in key order; scan is nil for an empty disk.
func (o *overlay) merge(scan func(func(k, v []byte) error) error, fn func(k, v []byte) error) error {
	emit := func(upTo []byte) error { // the overlay's keys before upTo (nil: all)
		for ; o.ok && (upTo == nil || bytes.Compare(o.key, upTo) < 0); o.next() {
			if !o.gone(o.key, o.age) {
				if err := fn(o.key, o.val); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if scan != nil {
		err := scan(func(k, v []byte) error {
			if err := emit(k); err != nil {
				return err
			}
			if (o.ok && bytes.Equal(o.key, k)) || o.gone(k, -1) {
				return nil // the overlay's (emitted next round) or deleted
			}
			return fn(k, v)
		})
		if err != nil {
			return err
		}
	}
	return emit(nil)
}

// runHeap orders runs by their current key, the newest op first among
// equal keys.
type runHeap []*run

func (h runHeap) Len() int { return len(h) }
func (h runHeap) Less(i, j int) bool {
	if c := bytes.Compare(h[i].key(), h[j].key()); c != 0 {
		return c < 0
	}
	return h[i].age > h[j].age
}
func (h runHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *runHeap) Push(x any)   { *h = append(*h, x.(*run)) }
func (h *runHeap) Pop() any {
	old := *h
	r := old[len(old)-1]
	*h = old[:len(old)-1]
	return r
}
