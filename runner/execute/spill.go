package execute

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
func (b specBuilder) pendingSpill() (agg.Spill, int) {
	if b.cfg.Space == nil || b.cfg.MemoryLimit <= 0 || !b.cfg.BoundPending {
		return nil, 0
	}
	return b.cfg.Space("\x00pending/"), int(budgetShare(b.cfg.MemoryLimit))
}

// gbkSpill gives a GroupByKey stage its spill space and byte budget: its
// share of the job's --memory_limit. No store or no limit: the GroupByKey
// keeps everything in memory.
func (b specBuilder) gbkSpill(stageID string) (agg.Spill, int) {
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

// jobSpace opens the spaces of one job's spill in its scratch, by name;
// nil without a store.
func jobSpace(sc *store.Scratch) func(name string) agg.Spill {
	if sc == nil {
		return nil
	}
	return func(name string) agg.Spill { return sc.Space(name) }
}

// dropSpill removes the job's scratch, and with it whatever its
// GroupByKeys and pending input left there (a failed or cancelled job
// stops before reading everything back): its disk space is free when the
// job ends.
func (r *run) dropSpill() {
	if r.scratch == nil {
		return
	}
	if err := r.scratch.Remove(); err != nil {
		r.log.Warn("removing the job's spill", "err", err)
	}
}
