package store

import (
	"bytes"
	"slices"
	"sync"

	"github.com/cockroachdb/pebble/v2"
)

// spillQueue is a Scratch's spill writer: the writes and deletes of its
// QueuedSpaces are ops that a goroutine of its own applies in order, so
// the goroutine that spills (a job's driver) never waits on the disk: not
// for a write, the free space (roomFor), flushes (settle) or opening the
// instance. Until applied, an op's data is in memory (Queued counts it);
// reads see the queued ops over what is on disk, so they return what the
// ops so far made, wherever the writer is. The first failed op fails every
// operation after it, naming the cause, as a synchronous write would have.
type spillQueue struct {
	x     *Scratch
	limit int64 // queued bytes past which Queued reports full

	mu      sync.Mutex
	cond    sync.Cond  // signalled when ops change or the queue stops
	ops     []*spillOp // queued, oldest first; ops[0] is being applied
	bytes   int64      // queued bytes of writes
	err     error      // first failure, or the scratch's removal
	running bool       // the writer goroutine is started
}

// spillOp is a queued write (keys and values, with the space's prefix)
// or, with del set, a DeletePrefix.
type spillOp struct {
	repr       []byte   // the writes as a Pebble batch (encodeRun)
	keys, vals [][]byte // views of repr
	sorted     bool     // keys ascend, so a scan finds its prefix by search
	n          int64
	del        []byte
}

// DefaultQueueLimit is how many bytes a Scratch's spill writer holds
// before Queued reports it full, unless LimitQueue says otherwise.
const DefaultQueueLimit = 16 << 20

// LimitQueue sets how many queued bytes its spill writer holds before
// Queued reports it full; call it before the first QueuedSpace is used.
func (x *Scratch) LimitQueue(bytes int64) {
	x.qmu.Lock()
	defer x.qmu.Unlock()
	x.queueLimit = max(bytes, 1)
}

// queue returns the scratch's spill writer, made on first use.
func (x *Scratch) queue() *spillQueue {
	x.qmu.Lock()
	defer x.qmu.Unlock()
	if x.q == nil {
		x.q = &spillQueue{x: x, limit: x.queueLimit}
		x.q.cond.L = &x.q.mu
	}
	return x.q
}

// push queues op; it never waits. A delete first drops the queued writes
// it wholly covers that the writer has not begun: pending input read back
// before the writer reached it then never goes to the disk, nor holds
// memory while it waits.
func (q *spillQueue) push(op *spillOp) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.err != nil {
		return q.err
	}
	if op.del != nil {
		q.dropCoveredLocked(op.del)
	}
	q.ops = append(q.ops, op)
	q.bytes += op.n
	if !q.running {
		q.running = true
		go q.run()
	}
	q.cond.Broadcast()
	return nil
}

// dropCoveredLocked drops the queued writes, bar the oldest (the writer
// may be applying it), whose every key has prefix. Reads see the same:
// the delete queued after them hides those keys anyway.
func (q *spillQueue) dropCoveredLocked(prefix []byte) {
	kept := q.ops[:min(len(q.ops), 1)]
	for _, o := range q.ops[len(kept):] {
		if o.del == nil && o.coveredBy(prefix) {
			q.bytes -= o.n
			continue
		}
		kept = append(kept, o)
	}
	clear(q.ops[len(kept):])
	q.ops = kept
}

// coveredBy reports whether every key of a write op has prefix; the keys
// with a prefix are a contiguous range, so a sorted op's ends tell.
func (op *spillOp) coveredBy(prefix []byte) bool {
	if len(op.keys) == 0 {
		return false
	}
	if op.sorted {
		return bytes.HasPrefix(op.keys[0], prefix) && bytes.HasPrefix(op.keys[len(op.keys)-1], prefix)
	}
	for _, k := range op.keys {
		if !bytes.HasPrefix(k, prefix) {
			return false
		}
	}
	return true
}

// run applies the queued ops in order until the queue stops.
func (q *spillQueue) run() {
	for {
		op := q.next()
		if op == nil {
			return
		}
		q.done(op, q.apply(op))
	}
}

// next waits for the oldest op, leaving it queued (reads see it until it
// is applied); nil once the queue stopped.
func (q *spillQueue) next() *spillOp {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.ops) == 0 && q.err == nil {
		q.cond.Wait()
	}
	if q.err != nil {
		q.running = false
		return nil
	}
	return q.ops[0]
}

func (q *spillQueue) apply(op *spillOp) error {
	x := q.x
	if op.del != nil {
		end := prefixEnd(op.del)
		if end == nil {
			return nil
		}
		return x.do(func(db *pebble.DB) error { return db.DeleteRange(op.del, end, pebble.NoSync) })
	}
	b := new(pebble.Batch)
	if err := b.SetRepr(op.repr); err != nil {
		return err
	}
	return x.write(b, int(op.n))
}

// done drops the applied op; a failure drops every op and stops the
// queue with it.
func (q *spillQueue) done(op *spillOp, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	defer q.cond.Broadcast()
	if err != nil {
		q.stopLocked(err)
		return
	}
	if len(q.ops) > 0 && q.ops[0] == op {
		q.ops[0] = nil
		q.ops = q.ops[1:]
		q.bytes -= op.n
	}
}

// stop fails every operation from now on with err (the first one
// stays), forgetting what was queued.
func (q *spillQueue) stop(err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.stopLocked(err)
	q.cond.Broadcast()
}

func (q *spillQueue) stopLocked(err error) {
	if q.err == nil {
		q.err = err
	}
	q.ops, q.bytes = nil, 0
}

// queued returns the bytes queued and whether they reach the limit.
func (q *spillQueue) queued() (int64, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.bytes, q.bytes >= q.limit
}

// wait blocks until every op queued so far is applied, or the queue
// stopped, and returns its error: for tests and tools, never the driver.
func (q *spillQueue) wait() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.ops) > 0 && q.err == nil {
		q.cond.Wait()
	}
	return q.err
}

// pending returns the queued ops, for a read to lay over the disk's.
func (q *spillQueue) pending() ([]*spillOp, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.ops), q.err
}
