package execute

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/beam-runner/beam-runner/runner/coders"

	"github.com/beam-runner/beam-runner/harness"
	"github.com/beam-runner/beam-runner/runner/engine"
)

// splitter tracks running bundles' instruction ids so the driver can split
// them, and the job's drain request.
type splitter struct {
	mu    sync.Mutex
	insts map[int]string // engine bundle id -> harness instruction id
	// pending counts split requests in flight per bundle: a bundle's
	// completion is reported only after the driver has every split result,
	// since work a split gave up is lost if its result is dropped.
	pending map[int]*sync.WaitGroup
	// turn lets one split request of a bundle be in flight at a time, so
	// the SDK answers them in the order the driver applies their results:
	// each result is relative to what the bundle kept after the one before.
	turn     map[int]chan struct{}
	draining atomic.Bool
	drainCh  chan struct{}
	once     sync.Once
}

func newSplitter() *splitter {
	return &splitter{insts: map[int]string{}, pending: map[int]*sync.WaitGroup{}, turn: map[int]chan struct{}{}, drainCh: make(chan struct{})}
}

func (s *splitter) started(id int, inst string) {
	s.mu.Lock()
	s.insts[id] = inst
	s.mu.Unlock()
}

// finished forgets a bundle once every split request for it has been
// answered and delivered; call before reporting the bundle done.
func (s *splitter) finished(id int) {
	s.mu.Lock()
	wg := s.pending[id]
	delete(s.insts, id)
	delete(s.pending, id)
	delete(s.turn, id)
	s.mu.Unlock()
	if wg != nil {
		wg.Wait()
	}
}

// begin registers a split request for a running bundle; false if the
// bundle is not running (not started yet, or finished). The request takes
// the bundle's turn before it is sent and passes it on once its result is
// delivered.
func (s *splitter) begin(id int) (string, *sync.WaitGroup, chan struct{}, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	inst := s.insts[id]
	if inst == "" {
		return "", nil, nil, false
	}
	wg := s.pending[id]
	if wg == nil {
		wg = &sync.WaitGroup{}
		s.pending[id] = wg
	}
	turn := s.turn[id]
	if turn == nil {
		turn = make(chan struct{}, 1)
		s.turn[id] = turn
	}
	wg.Add(1)
	return inst, wg, turn, true
}

func (s *splitter) inst(id int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.insts[id]
}

// drain starts draining; later calls do nothing.
func (s *splitter) drain() {
	s.once.Do(func() {
		s.draining.Store(true)
		close(s.drainCh)
	})
}

type splitDone struct {
	id  int
	res harness.SplitResult
	err error
}

// requestSplit asks a running bundle to give up the given fraction of its
// remaining work, reporting on done.
func (r *run) requestSplit(ctx context.Context, ss *sdkStage, b *engine.Bundle, fraction float64, done chan<- splitDone) {
	inst, wg, turn, ok := r.split.begin(b.ID)
	if !ok {
		return // not started yet, or already finished
	}
	n := countElements(b, ss) // here: a retry replaces b.Input on this goroutine
	fraction = splitFraction(fraction, ss.bounded && !r.split.draining.Load())
	go func() {
		defer wg.Done()
		select {
		case turn <- struct{}{}:
		case <-ctx.Done():
			return
		}
		defer func() { <-turn }()
		res, err := ss.harness.Split(ctx, inst, ss.io.Source, fraction, n)
		select {
		case done <- splitDone{id: b.ID, res: res, err: err}:
		case <-ctx.Done():
		}
	}()
}

func countElements(b *engine.Bundle, ss *sdkStage) int64 {
	n := int64(0)
	for _, c := range b.Input {
		coders.EachRaw(c, ss.input, func(_ *coders.WindowedValue, _ []byte) error { n++; return nil })
	}
	return n
}

// applySplit hands what a split gave up back to the engine: residual
// restrictions, and input elements past the channel split.
func (r *run) applySplit(eng *engine.Engine, ss *sdkStage, d splitDone) error {
	if d.err != nil {
		r.log.Debug("split refused", "bundle", d.id, "err", d.err)
		return nil // a bundle that finished or cannot split is not an error
	}
	sr := engine.SplitResult{
		FirstResidual: int(d.res.FirstResidual),
		Residuals:     residuals(harness.Result{Residuals: d.res.Residuals}),
	}
	for _, p := range d.res.Primaries {
		sr.Primary = append(sr.Primary, p.GetElement())
	}
	n, err := eng.ApplySplit(d.id, sr)
	if err != nil {
		return fmt.Errorf("stage %s: %w", ss.stage.ID, err)
	}
	if n > 0 {
		r.log.Info("split running bundle", "bundle", d.id, "stage", ss.stage.ID, "residuals", n)
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
		out = append(out, join(frames))
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
