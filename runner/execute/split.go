package execute

import (
	"context"
	"errors"
	"fmt"
	"github.com/beam-runner/beam-runner/runner/bundleio"
	"sync"
	"sync/atomic"

	"github.com/beam-runner/beam-runner/harness"
	"github.com/beam-runner/beam-runner/runner/engine"
)

// drainSignal is a job's drain request, set from any goroutine.
type drainSignal struct {
	on   atomic.Bool
	ch   chan struct{} // closed once set
	once sync.Once
}

func newDrainSignal() *drainSignal { return &drainSignal{ch: make(chan struct{})} }

// set starts draining; later calls do nothing.
func (s *drainSignal) set() {
	s.once.Do(func() {
		s.on.Store(true)
		close(s.ch)
	})
}

func (s *drainSignal) isSet() bool { return s.on.Load() }

type splitDone struct {
	rec *inflight
	res harness.SplitResult
	err error
	// checkpoint: the engine asked the bundle to keep nothing.
	checkpoint bool
}

// requestSplits carries out the engine's split decisions for bundles that
// are still running; one that finished meanwhile has nothing to split.
func (d *driver) requestSplits(ctx context.Context, reqs []engine.SplitRequest) {
	for _, sr := range reqs {
		if rec := d.inflight[sr.Bundle]; rec != nil {
			d.requestSplit(ctx, rec, sr.Fraction)
		}
	}
}

// requestSplit asks a running bundle to give up the given fraction of its
// remaining work, reporting on d.splits.
func (d *driver) requestSplit(ctx context.Context, rec *inflight, fraction float64) {
	inst, ok := rec.beginSplit()
	if !ok {
		return // not started yet, or already finished
	}
	ss := rec.ss
	n := ss.input.Count(rec.b.Input)
	checkpoint := fraction == 0
	fraction = splitFraction(fraction, ss.bounded && !d.r.drain.isSet())
	go func() {
		defer rec.splits.Done()
		select {
		case rec.turn <- struct{}{}:
		case <-ctx.Done():
			return
		}
		defer func() { <-rec.turn }()
		res, err := ss.harness.Split(ctx, inst, ss.io.Source, fraction, n)
		select {
		case d.splits <- splitDone{rec: rec, res: res, err: err, checkpoint: checkpoint}:
		case <-ctx.Done():
		}
	}()
}

// applySplit hands what a split gave up back to the engine: residual
// restrictions, and input elements past the channel split.
func (d *driver) applySplit(sd splitDone) error {
	id, ss := sd.rec.b.ID, sd.rec.ss
	if lost := (*harness.SplitLost)(nil); errors.As(sd.err, &lost) {
		return fmt.Errorf("stage %s: %w", ss.stage.ID, sd.err)
	}
	if sd.err != nil {
		d.r.log.Debug("split refused", "bundle", id, "err", sd.err)
		return nil // a bundle that finished or cannot split is not an error
	}
	sr := engine.SplitResult{
		FirstResidual: int(sd.res.FirstResidual),
		Residuals:     residuals(harness.Result{Residuals: sd.res.Residuals}),
		Checkpoint:    sd.checkpoint,
	}
	for _, p := range sd.res.Primaries {
		sr.Primary = append(sr.Primary, p.GetElement())
	}
	n, err := d.eng.ApplySplit(id, sr)
	if err != nil {
		return fmt.Errorf("stage %s: %w", ss.stage.ID, err)
	}
	if n > 0 {
		d.r.log.Info("split running bundle", "bundle", id, "stage", ss.stage.ID, "residuals", n)
	}
	return nil
}

// truncate runs a splittable stage's input through its truncation while
// draining, so sources stop at what they have claimed.
func (r *run) truncate(ctx context.Context, ss *sdkStage, input [][]byte) ([][]byte, error) {
	res, err := ss.harness.Process(ctx, harness.Bundle{
		Descriptor: ss.truncDesc, InputTransform: ss.truncIO.Source, Input: input,
		Outputs: []string{ss.truncSink},
	})
	if err != nil {
		return nil, fmt.Errorf("truncating restrictions of stage %s: %w", ss.stage.ID, err)
	}
	var out [][]byte
	if frames := res.Outputs[ss.truncSink]; len(frames) > 0 {
		out = append(out, bundleio.Join(frames))
	}
	return out, nil
}

// boundedCheckpoint is sent in place of a checkpoint's fraction of 0 to a
// stage whose restrictions are bounded. The Go SDK (2.77) computes the
// split point as index+progress and takes the fraction of the current
// element back out of it; from a bundle's second element on, rounding can
// make that fraction a hair below zero, which it reads as a channel split
// at the element it is processing: it reports that element as given up
// and still processes it, so the runner would run it twice (10M x 500 B
// under --memory_limit=1GiB failed on a later split that named input
// already given up). A millionth of a bounded remainder is still a
// checkpoint in effect; of an unbounded one it is not, so those get 0, and
// so do a drain's checkpoints, which must stop a source however its output
// is marked (Go marks an endless offset range's output bounded).
const boundedCheckpoint = 1e-6

// splitFraction is the fraction sent for a split the engine asked for;
// tiny says a tiny fraction may stand for 0.
func splitFraction(asked float64, tiny bool) float64 {
	if asked == 0 && tiny {
		return boundedCheckpoint
	}
	return asked
}
