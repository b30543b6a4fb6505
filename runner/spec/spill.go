package spec

import (
	"github.com/beam-runner/beam-runner/runner/engine/agg"
	"github.com/beam-runner/beam-runner/runner/stagekind"
	"github.com/beam-runner/beam-runner/runner/store"
)

// The job's --memory_limit is shared in eighths: three for SDK stages'
// pending and in-flight bundle input, three split evenly over its
// GroupByKeys, and one for the output of source bundles in flight (the
// engine checkpoints them by it: a third of the pending budget). The last
// eighth is headroom for what no budget counts: frames on the wire,
// decoding, and the Go heap's own slack.
func budgetShare(limit int64) int64 { return limit / 8 * 3 }

// pendingSpill gives the engine the space and byte budget for SDK stages'
// pending input. No store, no limit or no BoundPending: pending input
// stays in memory.
func (b builder) pendingSpill() (agg.Spill, int) {
	if b.cfg.Space == nil || b.cfg.MemoryLimit <= 0 || !b.cfg.BoundPending {
		return nil, 0
	}
	return b.cfg.Space("\x00pending/"), int(budgetShare(b.cfg.MemoryLimit))
}

// gbkSpill gives a GroupByKey stage its spill space and byte budget: its
// share of the job's --memory_limit. No store or no limit: the GroupByKey
// keeps everything in memory.
func (b builder) gbkSpill(stageID string) (agg.Spill, int) {
	if b.cfg.Space == nil || b.cfg.MemoryLimit <= 0 {
		return nil, 0
	}
	n := 0
	for _, s := range b.pl.Stages {
		if s.Kind == stagekind.GBK {
			n++
		}
	}
	gbks := budgetShare(b.cfg.MemoryLimit)
	return b.cfg.Space(stageID + "/"), int(gbks / int64(max(n, 1)))
}

// Memory is how a job's data is held: in memory up to Limit bytes (0: no
// limit), the rest spilled to Store (nil: none).
type Memory struct {
	// Store, if set, takes what GroupByKeys buffer past Limit bytes (per
	// job, split evenly over its GroupByKeys).
	Store *store.Store
	Limit int64
	// BoundPending extends the limit to SDK stages' pending input (with
	// source checkpoints that bound a running bundle's output). Only an
	// explicit --memory_limit turns it on, so that the default limit does
	// not checkpoint every source bundle of every job. Such checkpoints
	// once met a Go SDK rounding bug at fraction 0, which boundedCheckpoint
	// (runner/execute/split.go) works around.
	BoundPending bool
}

// Spill is one job's spill space in the store; a nil *Spill (no store)
// opens no space.
type Spill struct{ sc *store.Scratch }

// Open gives job its spill space; nil without a store. Its writes queue
// for a goroutine of the store's, so the driver never waits on the disk;
// the queue holds up to an eighth of the limit (the headroom no budget
// counts), at least queueFloor, before the engine keeps what it would
// spill in memory instead (agg.Queuing).
func (m Memory) Open(job string) *Spill {
	if m.Store == nil {
		return nil
	}
	sc := m.Store.Scratch(job)
	sc.LimitQueue(max(m.Limit/8, queueFloor))
	return &Spill{sc: sc}
}

// queueFloor keeps a small --memory_limit from making every spill write
// wait for the one before it.
const queueFloor = 1 << 20

// Space opens the named space of the job's spill, written through its
// queue; nil without a store.
func (s *Spill) Space(name string) agg.Spill {
	if s == nil {
		return nil
	}
	return s.sc.QueuedSpace(name)
}

// Spaces is Space as a function, for Config.Space; nil without a store.
func (s *Spill) Spaces() func(name string) agg.Spill {
	if s == nil {
		return nil
	}
	return s.Space
}

// Bytes is what the job has spilled, on disk; 0 without a store.
func (s *Spill) Bytes() (int64, error) {
	if s == nil {
		return 0, nil
	}
	return s.sc.Size()
}

// Remove removes the job's spill whole, with whatever its GroupByKeys and
// pending input left there.
func (s *Spill) Remove() error {
	if s == nil {
		return nil
	}
	return s.sc.Remove()
}
