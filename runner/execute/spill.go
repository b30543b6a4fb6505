package execute

import (
	"github.com/beam-runner/beam-runner/runner/engine/agg"
	"github.com/beam-runner/beam-runner/runner/stagekind"
	"github.com/beam-runner/beam-runner/runner/store"
)

// spillPrefix is where GroupByKeys spill in the store, per job and stage.
const spillPrefix = "spill/"

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

// jobSpace opens the spaces of one job's spill in the store, by name; nil
// without a store.
func jobSpace(st *store.Store, jobID string) func(name string) agg.Spill {
	if st == nil {
		return nil
	}
	return func(name string) agg.Spill { return st.Space(spillPrefix + jobID + "/" + name) }
}

// dropSpill removes what the job's GroupByKeys left in the store (a failed
// or cancelled job stops before reading everything back).
func (r *run) dropSpill() {
	if r.opts.Store == nil {
		return
	}
	if err := jobSpace(r.opts.Store, r.job.ID)("").DeletePrefix(nil); err != nil {
		r.log.Warn("dropping spilled data", "err", err)
	}
}
