package engine

import (
	"encoding/binary"
	"fmt"

	"github.com/beam-runner/beam-runner/runner/engine/agg"
)

// pendingSpill keeps SDK stages' pending input within a byte budget: a
// chunk enqueued past it goes to the spill (the store, through the same
// small interface GroupByKeys spill to) and is read back when a bundle is
// cut. Bundles are then cut to at most the budget in all, so what a stage
// holds in memory, pending and in flight, stays near the budget however
// much a GroupByKey fires at once.
//
// The policy: the oldest chunks stay in memory (they are cut first), the
// newest spill; nothing spilled is read back before a bundle needs it.
type pendingSpill struct {
	sp     agg.Spill
	budget int    // bytes of pending input held in memory
	mem    int    // bytes of pending input now in memory (counted chunks)
	flight int    // bytes of input of bundles in flight
	next   uint64 // number of the next spilled chunk
}

// newPendingSpill is nil (no limit) unless the spec gives a spill.
func newPendingSpill(spec Spec) *pendingSpill {
	if spec.PendingSpill == nil {
		return nil
	}
	return &pendingSpill{sp: spec.PendingSpill, budget: max(spec.PendingBudget, 1)}
}

// admit counts a chunk about to be added to a stage's pending input and,
// past the budget, moves its data to the spill, unless the spill's queue
// is full (agg.Queuing): then it stays in memory, counted, past the
// budget, until a bundle takes it.
func (p *pendingSpill) admit(st *stage, c chunk) (chunk, error) {
	if p.mem+p.flight+len(c.data) <= p.budget || agg.SpillFull(p.sp) {
		c.mem = len(c.data)
		p.mem += c.mem
		return c, nil
	}
	key := binary.BigEndian.AppendUint64([]byte(st.spec.ID+"\x00"), p.next)
	p.next++
	if err := p.sp.WriteRun([][]byte{key}, [][]byte{c.data}); err != nil {
		return c, fmt.Errorf("spilling pending input: %w", err)
	}
	c.spillKey, c.size, c.data = key, len(c.data), nil
	return c, nil
}

// load returns a chunk's data, reading a spilled one back and dropping it
// from the spill when drop is set.
func (p *pendingSpill) load(c chunk, drop bool) ([]byte, error) {
	if c.spillKey == nil {
		return c.data, nil
	}
	data, err := readSpilled(p.sp.Scan, c.spillKey)
	if err == nil && drop {
		if err = p.sp.DeletePrefix(c.spillKey); err != nil {
			err = fmt.Errorf("reading back pending input %x: %w", c.spillKey, err)
		}
	}
	return data, err
}

// readSpilled reads a spilled chunk's data with scan (a Spill's, or a
// view's).
func readSpilled(scan func(prefix []byte, fn func(key, value []byte) error) error, key []byte) ([]byte, error) {
	var data []byte
	err := scan(key, func(k, v []byte) error {
		if len(k) == len(key) {
			data = append([]byte(nil), v...)
		}
		return nil
	})
	if err == nil && data == nil {
		err = fmt.Errorf("missing from the spill")
	}
	if err != nil {
		return nil, fmt.Errorf("reading back pending input %x: %w", key, err)
	}
	return data, nil
}

// take removes from pending the chunks of the next bundles: all of them
// without a spill, else chunks up to what the budget leaves beside the
// bundles in flight (at least one when the stage has none, so it always
// progresses), read back into memory. It returns the taken chunks, their
// bytes (held until the bundles end: release) and those left pending.
func (p *pendingSpill) take(st *stage, pending []chunk) (taken []chunk, bytes int, rest []chunk, err error) {
	if p == nil {
		return pending, 0, nil, nil
	}
	n := 0
	for n < len(pending) && ((n == 0 && len(st.flight) == 0) || p.flight+bytes+pending[n].bytes() <= p.budget) {
		bytes += pending[n].bytes()
		n++
	}
	taken = make([]chunk, n)
	for i, c := range pending[:n] {
		data, err := p.load(c, true)
		if err != nil {
			return nil, 0, pending, err
		}
		p.mem = max(p.mem-c.mem, 0)
		taken[i] = chunk{data: data, minTS: c.minTS}
	}
	p.flight += bytes
	return taken, bytes, pending[n:], nil
}

// untake returns bytes take counted for chunks that went back to wait.
func (p *pendingSpill) untake(bytes int) {
	if p != nil {
		p.flight = max(p.flight-bytes, 0)
	}
}

// release returns the bytes a finished bundle's input held.
func (p *pendingSpill) release(b *bundle) {
	if p != nil {
		p.flight = max(p.flight-b.mem, 0)
		b.mem = 0
	}
}

// bytes is the size of a chunk's data, spilled or not.
func (c chunk) bytes() int {
	if c.spillKey != nil {
		return c.size
	}
	return len(c.data)
}

// sourceCheckpointBytes bounds how much output a bundle of a splittable
// stage (a source) sends before it is checkpointed: the driver holds a
// bundle's output until it commits, so a long-running source bundle would
// hold any amount of it (GroupByKey of 1M x 100 B, four source bundles:
// 108 MB of data-plane frames at the peak). A checkpoint commits what the
// bundle produced (to pending input or a GroupByKey, which spill) and its
// residual runs as a new bundle. Each checkpoint is a round trip to the SDK
// and a new bundle, so the bound is not small: 1M x 100 B at
// --memory_limit=64MiB took 12.1 s with a 1 MiB bound, 8.3 s with 8 MiB,
// against 7.2 s without a limit.
const sourceCheckpointBytes = 8 << 20

// outputBound is how much output a bundle of st may send before it is
// checkpointed.
func (f *flow) outputBound(st *stage) int64 {
	if f.feedsTree(st) {
		return treeCheckpointBytes
	}
	return sourceCheckpointBytes
}

// NoteOutput records how many bytes a running bundle has sent back so
// far; the driver reports it as output arrives.
func (e *Engine) NoteOutput(bundle int, bytes int64) {
	if b := e.flight[bundle]; b != nil {
		b.out = bytes
	}
}

// memoryCheckpoints are the checkpoints (splits keeping nothing of the
// remaining work) of splittable bundles that sent their stage's output
// bound since they started or were last checkpointed: treeCheckpointBytes
// for a stage feeding a combiner tree (combtree.go), sourceCheckpointBytes
// otherwise.
func (e *Engine) memoryCheckpoints() []SplitRequest {
	var out []SplitRequest
	for _, st := range e.flow.stages {
		every := e.flow.outputBound(st)
		if !st.spec.Splittable {
			continue
		}
		for _, b := range oldestFirst(st.flight) {
			if b.out-b.outAtCkpt >= every {
				b.outAtCkpt = b.out
				b.splitAt = e.flow.now // also keeps the dynamic split policy off it
				out = append(out, SplitRequest{Bundle: b.ID})
			}
		}
	}
	return out
}
