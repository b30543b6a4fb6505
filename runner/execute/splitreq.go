package execute

import (
	"context"

	"github.com/beam-runner/beam-runner/runner/engine"
)

// requestSplits carries out the engine's split decisions for bundles that
// are still running; one that finished meanwhile has nothing to split.
func (r *run) requestSplits(ctx context.Context, reqs []engine.SplitRequest, stages map[string]*sdkStage, running map[int]*engine.Bundle, done chan<- splitDone) {
	for _, sr := range reqs {
		if b := running[sr.Bundle]; b != nil {
			r.requestSplit(ctx, stages[b.Stage], b, sr.Fraction, done)
		}
	}
}
