package spec

import (
	"slices"

	"github.com/beam-runner/beam-runner/runner/engine/agg"
	"github.com/beam-runner/beam-runner/runner/plan"
	"github.com/beam-runner/beam-runner/runner/stagekind"
	"github.com/beam-runner/beam-runner/worker/sdkenv"
)

// HotSpace is the job's spill space where GroupByKeys put the pages of hot
// keys.
const HotSpace = "\x00hot/"

// hotShare: a key's values read back from the spill stay in memory up to
// a quarter of its GroupByKey's budget; past it they are paged (agg/hot.go).
const hotShare = 4

// gbkHot gives a spilling GroupByKey its hot-key pages, if every reader of
// its output can take a state-backed iterable: SDK stages of the Go SDK,
// which read one from the plain iterable coder the GroupByKey's output
// has, and Python stages told by the plan that the values are state-backed
// (beam:coder:state_backed_iterable:v1, plan/statebacked.go).
func (b builder) gbkHot(s *plan.Stage, budget int) (agg.Spill, []byte, int) {
	if b.cfg.Space == nil || len(s.Outputs) == 0 || !b.stateBackedReaders(s.Outputs[0]) {
		return nil, nil, 0
	}
	return b.cfg.Space(HotSpace), []byte(s.ID + "\x00"), max(budget/hotShare, 1)
}

// stateBackedReaders: pc has readers, all SDK stages reading it as their
// main input as a state-backed iterable.
func (b builder) stateBackedReaders(pc string) bool {
	n := 0
	for _, s := range b.pl.Stages {
		for _, side := range s.SideInputs {
			if side.PColl == pc {
				return false
			}
		}
		if !slices.Contains(s.Inputs, pc) && !slices.Contains(s.CopyInputs, pc) {
			continue
		}
		if s.Kind != stagekind.SDK || !(b.goEnv(s.Env) || s.InputCoders[pc].StateBacked) {
			return false
		}
		n++
	}
	return n > 0
}

func (b builder) goEnv(id string) bool {
	return sdkenv.SDKOf(b.pl.Components.GetEnvironments()[id]) == sdkenv.Go
}
