package workers

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/harness"
	"github.com/beam-runner/beam-runner/runner/placement"
)

// Set is one environment's harnesses, one per slot of its board
// (placement.Board): a bundle goes to the least-loaded harness that is up;
// its splits, progress and finalization go to the harness that runs it,
// found from the instruction key the set hands out ("<slot>/<instruction>":
// instruction ids are per harness). A local environment's slots are all
// up from the start (a lost worker is restarted before its bundle is
// retried); a remote one's come and go with their pools (remote.go).
type Set struct {
	sdk string // for errors: the SDK whose pools these are

	mu      sync.Mutex
	board   *placement.Board
	hs      []*harness.Harness // by slot; nil until its first worker connects
	descs   []*fnpb.ProcessBundleDescriptor
	changed chan struct{} // closed and replaced whenever a slot changes
}

// newSet is the set of a local environment's connected harnesses.
func newSet(hs []*harness.Harness) *Set {
	ws := newBoardSet("local", placement.NewBoard([]string{"local"}, []int{len(hs)}))
	for i, h := range hs {
		ws.hs[i] = h
		ws.board.Connected(i)
	}
	return ws
}

func newBoardSet(sdk string, b *placement.Board) *Set {
	return &Set{sdk: sdk, board: b, hs: make([]*harness.Harness, b.Slots()), changed: make(chan struct{})}
}

// update changes the board under the set's lock and wakes bundles
// waiting for a worker.
func (ws *Set) update(f func(b *placement.Board)) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	f(ws.board)
	close(ws.changed)
	ws.changed = make(chan struct{})
}

// Register sends the descriptors to every harness; harnesses that connect
// later get them before their first bundle.
func (ws *Set) Register(ctx context.Context, descs ...*fnpb.ProcessBundleDescriptor) error {
	ws.Add(descs...)
	return ws.RegisterAdded(ctx)
}

// Add records descriptors for RegisterAdded (or a harness's next bundle)
// to send, without sending them.
func (ws *Set) Add(descs ...*fnpb.ProcessBundleDescriptor) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.descs = append(ws.descs, descs...)
}

// RegisterAdded sends every harness that is up the descriptors it lacks,
// in one request each, to all harnesses at once: a job's stages cost one
// round trip to register, not one per stage and harness.
func (ws *Set) RegisterAdded(ctx context.Context) error {
	ws.mu.Lock()
	descs := ws.descs
	var hs []*harness.Harness
	for i, h := range ws.hs {
		if h != nil && ws.board.State(i) == placement.Up {
			hs = append(hs, h)
		}
	}
	ws.mu.Unlock()
	errs := make([]error, len(hs))
	var wg sync.WaitGroup
	for i, h := range hs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = h.Register(ctx, descs...)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func (ws *Set) descriptors() []*fnpb.ProcessBundleDescriptor {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return ws.descs
}

// Process runs b on the least-loaded harness. b.Started and the result's
// Instruction carry instruction keys for Split, Progress and Finalize.
func (ws *Set) Process(ctx context.Context, b harness.Bundle) (harness.Result, error) {
	return ws.ProcessPlaced(ctx, b, Placement{})
}

// Placement is where a bundle asks to run.
type Placement struct {
	// Avoid names workers where the bundle's user code failed: it runs
	// on another when one is up.
	Avoid []string
	// Lane is 1 + the slot the bundle asks for (a stateful stage's key
	// lane, engine.Bundle.Lane), kept while that slot is up; 0: any.
	Lane int
}

// ProcessPlaced is Process on the harness p asks for.
func (ws *Set) ProcessPlaced(ctx context.Context, b harness.Bundle, p Placement) (harness.Result, error) {
	i, h, err := ws.acquire(ctx, p)
	if err != nil {
		return harness.Result{}, err
	}
	defer ws.update(func(b *placement.Board) { b.Release(i) })
	if err := h.Register(ctx, ws.descriptors()...); err != nil {
		return harness.Result{}, err
	}
	if started := b.Started; started != nil {
		b.Started = func(inst string) { started(instKey(i, inst)) }
	}
	res, err := h.Process(ctx, b)
	res.Instruction = instKey(i, res.Instruction)
	return res, err
}

// acquire waits for the board to give the bundle a harness, or fails once
// every pool is down.
func (ws *Set) acquire(ctx context.Context, p Placement) (int, *harness.Harness, error) {
	for {
		ws.mu.Lock()
		i, v := ws.board.AcquirePreferring(p.Lane-1, ws.slotsOf(p.Avoid))
		changed := ws.changed
		switch v {
		case placement.Run:
			h := ws.hs[i]
			ws.mu.Unlock()
			return i, h, nil
		case placement.NoneLeft:
			err := ws.board.NoneLeftError(ws.sdk)
			ws.mu.Unlock()
			return -1, nil, err
		}
		ws.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return -1, nil, ctx.Err()
		}
	}
}

// slotsOf finds the slots whose harnesses run the workers named; the
// caller holds ws.mu.
func (ws *Set) slotsOf(workers []string) []int {
	var out []int
	for i, h := range ws.hs {
		if h != nil && len(workers) > 0 && slices.Contains(workers, h.ID()) {
			out = append(out, i)
		}
	}
	return out
}

// Workers is how many workers the set may run bundles on: those up,
// starting or on a pool that is down, not those drained by a scale-down.
func (ws *Set) Workers() int {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return ws.board.Active()
}

// Split asks the harness running key's bundle to split it.
func (ws *Set) Split(ctx context.Context, key, source string, fraction float64, estimatedElements int64) (harness.SplitResult, error) {
	h, inst, err := ws.route(key)
	if err != nil {
		return harness.SplitResult{}, err
	}
	return h.Split(ctx, inst, source, fraction, estimatedElements)
}

// Progress asks the harness running key's bundle for its metrics so far.
func (ws *Set) Progress(ctx context.Context, key string) ([]*pipepb.MonitoringInfo, error) {
	h, inst, err := ws.route(key)
	if err != nil {
		return nil, err
	}
	return h.Progress(ctx, inst)
}

// Finalize runs the finalization callbacks of key's bundle.
func (ws *Set) Finalize(ctx context.Context, key string) error {
	h, inst, err := ws.route(key)
	if err != nil {
		return err
	}
	return h.Finalize(ctx, inst)
}

func instKey(i int, inst string) string { return strconv.Itoa(i) + "/" + inst }

func (ws *Set) route(key string) (*harness.Harness, string, error) {
	idx, inst, ok := strings.Cut(key, "/")
	i, err := strconv.Atoi(idx)
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if !ok || err != nil || i < 0 || i >= len(ws.hs) || ws.hs[i] == nil {
		return nil, "", fmt.Errorf("instruction key %q names no harness of this environment", key)
	}
	return ws.hs[i], inst, nil
}
