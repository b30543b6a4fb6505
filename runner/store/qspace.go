package store

import (
	"bytes"
	"encoding/binary"
	"slices"

	"github.com/cockroachdb/pebble/v2"
)

// QueuedSpace is a Space whose writes and deletes go through its
// Scratch's spill writer (queue.go): they return at once, and a goroutine
// of the scratch's applies them. It implements agg.Spill for the engine,
// which runs on a job's driver goroutine and must never wait on the disk.
type QueuedSpace struct {
	x      *Scratch
	prefix []byte
}

// QueuedSpace returns the space under prefix, written through the
// scratch's spill writer. It sees what the Space of the same prefix has.
func (x *Scratch) QueuedSpace(prefix string) *QueuedSpace {
	return &QueuedSpace{x: x, prefix: []byte(prefix)}
}

// WriteRun queues the pairs, copied, as one atomic write. An error is
// that of an earlier write (or the scratch's removal): a failed write
// fails every operation after it.
func (sp *QueuedSpace) WriteRun(keys, values [][]byte) error {
	return sp.x.queue().push(encodeRun(sp.prefix, keys, values))
}

// encodeRun copies the pairs once, straight into a Pebble batch's
// representation (a 12-byte header, then each pair as its kind and two
// length-prefixed strings) of exactly their size; the op's keys and
// values are views of it. The writer hands Pebble that copy: a copy per
// pair for the queue and a growing batch built from it held about three
// times a run's bytes while it was written.
func encodeRun(prefix []byte, keys, values [][]byte) *spillOp {
	size := batchHeaderLen
	for i := range keys {
		k, v := len(prefix)+len(keys[i]), len(values[i])
		size += 1 + uvarintLen(k) + k + uvarintLen(v) + v
	}
	op := &spillOp{keys: make([][]byte, len(keys)), vals: make([][]byte, len(keys)), sorted: true}
	op.repr = make([]byte, batchHeaderLen, size)
	binary.LittleEndian.PutUint32(op.repr[8:batchHeaderLen], uint32(len(keys)))
	for i := range keys {
		op.repr = append(op.repr, byte(pebble.InternalKeyKindSet))
		op.repr = binary.AppendUvarint(op.repr, uint64(len(prefix)+len(keys[i])))
		at := len(op.repr)
		op.repr = append(append(op.repr, prefix...), keys[i]...)
		op.keys[i] = op.repr[at:len(op.repr):len(op.repr)]
		op.repr = binary.AppendUvarint(op.repr, uint64(len(values[i])))
		at = len(op.repr)
		op.repr = append(op.repr, values[i]...)
		op.vals[i] = op.repr[at:len(op.repr):len(op.repr)]
		op.n += int64(len(op.keys[i]) + len(values[i]))
		if i > 0 && bytes.Compare(op.keys[i-1], op.keys[i]) >= 0 {
			op.sorted = false
		}
	}
	return op
}

// batchHeaderLen is a Pebble batch representation's header: its sequence
// number (set by Pebble when it commits) and its count.
const batchHeaderLen = 12

func uvarintLen(n int) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutUvarint(b[:], uint64(n))
}

// DeletePrefix queues the deletion of every key of the space with the
// prefix; reads from now on no longer see them.
func (sp *QueuedSpace) DeletePrefix(prefix []byte) error {
	return sp.x.queue().push(&spillOp{del: append(slices.Clip(sp.prefix), prefix...)})
}

// Scan calls fn for every key of the space with the prefix, in order,
// with the space's prefix removed: the queued ops laid over the disk. It
// reads the disk for what is written already.
func (sp *QueuedSpace) Scan(prefix []byte, fn func(key, value []byte) error) error {
	return sp.ScanFrom(prefix, nil, fn)
}

// ScanFrom is Scan from the first key at or after from (a key of the
// space, nil: the prefix's first), so a long read can go on where it
// stopped without reading again what it passed.
func (sp *QueuedSpace) ScanFrom(prefix, from []byte, fn func(key, value []byte) error) error {
	full := append(slices.Clip(sp.prefix), prefix...)
	var start []byte
	if from != nil {
		start = append(slices.Clip(sp.prefix), from...)
	}
	ops, err := sp.x.queue().pending()
	if err != nil {
		return err
	}
	o := newOverlay(ops, full, start)
	strip := func(k, v []byte) error { return fn(k[len(sp.prefix):], v) }
	opened := false
	err = sp.x.do(func(db *pebble.DB) error {
		opened = true
		return o.merge(func(f func(k, v []byte) error) error { return scanReader(db, full, start, f) }, strip)
	})
	if err == nil && !opened { // nothing written yet: all is queued
		err = o.merge(nil, strip)
	}
	return err
}

// Queued is how many bytes the scratch's spill writer holds, not yet
// written, and whether that reaches its bound: the owner then keeps what
// it would spill in memory instead (see agg.Queuing).
func (sp *QueuedSpace) Queued() (bytes int64, full bool) { return sp.x.queue().queued() }

// Flush waits until everything queued so far is written and returns the
// first failure: for tests and tools; the driver never waits.
func (sp *QueuedSpace) Flush() error { return sp.x.queue().wait() }
