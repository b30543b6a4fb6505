// Package harness is the runner's handle on one connected SDK harness:
// register descriptors, process bundles, and collect their outputs.
package harness

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/dataplane"
	"github.com/beam-runner/beam-runner/fnapi"
	"github.com/beam-runner/beam-runner/stateplane"
)

// Harness drives one SDK harness. After its worker fails, Rebind moves it
// to a restarted one, so callers keep one handle per environment.
type Harness struct {
	next atomic.Int64

	mu struct {
		sync.Mutex
		w          *fnapi.Worker
		registered map[string]bool
		descs      []*fnpb.ProcessBundleDescriptor // every one registered, for Rebind
	}
}

// New wraps a worker whose control stream is (or will be) connected.
func New(w *fnapi.Worker) *Harness {
	h := &Harness{}
	h.mu.w, h.mu.registered = w, map[string]bool{}
	return h
}

// worker is the current worker; a call uses one worker throughout.
func (h *Harness) worker() *fnapi.Worker {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.mu.w
}

// ID is the current worker's id.
func (h *Harness) ID() string { return h.worker().ID }

// Worker is the current worker.
func (h *Harness) Worker() *fnapi.Worker { return h.worker() }

// Failed is closed when the current worker has failed.
func (h *Harness) Failed() <-chan struct{} { return h.worker().Failed() }

// Rebind moves the harness to a new worker (a restart after a failure)
// and registers with it every descriptor the old one had.
func (h *Harness) Rebind(ctx context.Context, w *fnapi.Worker) error {
	h.mu.Lock()
	h.mu.w, h.mu.registered = w, map[string]bool{}
	descs := h.mu.descs
	h.mu.descs = nil
	h.mu.Unlock()
	return h.Register(ctx, descs...)
}

func (h *Harness) instID(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, h.next.Add(1))
}

// Register sends the descriptors the harness has not seen yet.
func (h *Harness) Register(ctx context.Context, descs ...*fnpb.ProcessBundleDescriptor) error {
	var todo []*fnpb.ProcessBundleDescriptor
	h.mu.Lock()
	w := h.mu.w
	for _, d := range descs {
		if !h.mu.registered[d.GetId()] {
			todo = append(todo, d)
		}
	}
	h.mu.Unlock()
	if len(todo) == 0 {
		return nil
	}
	resp, err := w.Do(ctx, &fnpb.InstructionRequest{
		InstructionId: h.instID("reg"),
		Request:       &fnpb.InstructionRequest_Register{Register: &fnpb.RegisterRequest{ProcessBundleDescriptor: todo}},
	})
	if err != nil {
		return &WorkerLost{Worker: w.ID, During: "registering descriptors", Cause: err}
	}
	if resp.GetError() != "" {
		return fmt.Errorf("worker %q rejected descriptors: %s", w.ID, resp.GetError())
	}
	h.mu.Lock()
	if h.mu.w == w {
		for _, d := range todo {
			h.mu.registered[d.GetId()] = true
			h.mu.descs = append(h.mu.descs, d)
		}
	}
	h.mu.Unlock()
	return nil
}

// Bundle is one unit of work for a registered descriptor.
type Bundle struct {
	Descriptor string
	// Input is the encoded elements for the descriptor's data source.
	InputTransform string
	Input          [][]byte
	// Outputs are the data sink transform ids the harness will end.
	Outputs []string
	// State answers the bundle's state requests (side inputs); may be nil.
	State stateplane.Handler
	// CacheTokens name the state the SDK may cache across bundles.
	CacheTokens []*fnpb.ProcessBundleRequest_CacheToken
	// TimerStreams are the stage's timer families: each gets an input
	// stream (Timers, possibly empty) and is expected back as an output.
	TimerStreams []TimerStream
	Timers       map[TimerStream][]byte
	// Started, if set, learns the bundle's instruction id before its input
	// is sent, so the caller can split the running bundle.
	Started func(inst string)
	// OutputBytes, if set, grows by the bytes of data output received,
	// while the bundle runs.
	OutputBytes *atomic.Int64
}

// TimerStream names the timers of one family of one transform.
type TimerStream struct{ Transform, Family string }

func (t TimerStream) key() string { return t.Transform + "/" + t.Family }

// Result is what a successful bundle produced.
type Result struct {
	Outputs    map[string][][]byte // sink transform id -> encoded frames
	Timers     map[TimerStream][][]byte
	Monitoring []*pipepb.MonitoringInfo
	Residuals  []*fnpb.DelayedBundleApplication
	// Instruction is the bundle's id on the harness; NeedsFinalize says
	// the SDK registered finalization callbacks for it (see Finalize).
	Instruction   string
	NeedsFinalize bool
}

// Finalize runs a bundle's finalization callbacks; call it only after the
// bundle's outputs are committed.
func (h *Harness) Finalize(ctx context.Context, inst string) error {
	w := h.worker()
	resp, err := w.Do(ctx, &fnpb.InstructionRequest{
		InstructionId: h.instID("fin"),
		Request: &fnpb.InstructionRequest_FinalizeBundle{FinalizeBundle: &fnpb.FinalizeBundleRequest{
			InstructionId: inst,
		}},
	})
	if err != nil {
		return fmt.Errorf("finalizing bundle %s on worker %q: %w", inst, w.ID, err)
	}
	if resp.GetError() != "" {
		return fmt.Errorf("finalizing bundle %s on worker %q: %s", inst, w.ID, resp.GetError())
	}
	return nil
}

// Process runs one bundle to completion. Every wait is bounded by ctx and
// by the worker's failure: the input is sent while the response is awaited,
// so an SDK that fails the bundle before reading its input (a DoFn that
// cannot be loaded) is heard at once.
func (h *Harness) Process(ctx context.Context, b Bundle) (Result, error) {
	w := h.worker()
	inst := h.instID("b")
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if b.State != nil {
		w.State.Register(inst, b.State)
		defer w.State.Unregister(inst)
	}
	var timerKeys []string
	for _, ts := range b.TimerStreams {
		timerKeys = append(timerKeys, ts.key())
	}
	recv := w.Data.Expect(inst, b.Outputs, timerKeys)
	if b.OutputBytes != nil {
		recv.CountInto(b.OutputBytes)
	}
	defer w.Data.Forget(inst)
	if b.Started != nil {
		b.Started(inst)
	}
	respc := make(chan respOrErr, 1)
	go func() {
		resp, err := w.Do(ctx, &fnpb.InstructionRequest{
			InstructionId: inst,
			Request: &fnpb.InstructionRequest_ProcessBundle{ProcessBundle: &fnpb.ProcessBundleRequest{
				ProcessBundleDescriptorId: b.Descriptor,
				CacheTokens:               b.CacheTokens,
			}},
		})
		respc <- respOrErr{resp, err}
	}()
	sendc := make(chan error, 1)
	go func() { sendc <- h.sendInput(ctx, w, inst, b) }()
	resp, err := h.await(ctx, w, inst, respc, sendc)
	if err != nil {
		return Result{}, err
	}
	if err := h.awaitOutput(ctx, w, inst, recv); err != nil {
		return Result{}, err
	}
	return bundleResult(inst, resp.GetProcessBundle(), recv.Result(), b.TimerStreams), nil
}

// awaitOutput waits until the bundle's output has all arrived.
func (h *Harness) awaitOutput(ctx context.Context, w *fnapi.Worker, inst string, recv *dataplane.Receiver) error {
	select {
	case <-recv.Done():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-w.Failed():
		return &WorkerLost{Worker: w.ID, Instruction: inst, During: "receiving output", Cause: w.Err()}
	case <-w.Data.Closed():
		return &WorkerLost{Worker: w.ID, Instruction: inst, During: "receiving output", Cause: dataLost(w)}
	}
}

// bundleResult is a finished bundle's response and received output.
func bundleResult(inst string, pb *fnpb.ProcessBundleResponse, got dataplane.Output, streams []TimerStream) Result {
	timers := map[TimerStream][][]byte{}
	for _, ts := range streams {
		if frames := got.Timers[ts.key()]; len(frames) > 0 {
			timers[ts] = frames
		}
	}
	return Result{
		Outputs:    got.Data,
		Timers:     timers,
		Monitoring: pb.GetMonitoringInfos(),
		Residuals:  pb.GetResidualRoots(),

		Instruction:   inst,
		NeedsFinalize: pb.GetRequiresFinalization(),
	}
}

// await waits for a bundle's response and for its input to be sent,
// returning the first failure: an error response, a failed send, the
// worker's failure or the data stream's end.
func (h *Harness) await(ctx context.Context, w *fnapi.Worker, inst string, respc <-chan respOrErr, sendc <-chan error) (*fnpb.InstructionResponse, error) {
	var resp *fnpb.InstructionResponse
	for resp == nil || sendc != nil {
		select {
		case r := <-respc:
			if r.err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				return nil, &WorkerLost{Worker: w.ID, Instruction: inst, During: "processing", Cause: r.err}
			}
			if msg := r.resp.GetError(); msg != "" {
				return nil, &BundleError{Instruction: inst, Worker: w.ID, Msg: msg}
			}
			resp, respc = r.resp, nil
		case err := <-sendc:
			if err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				return nil, &WorkerLost{Worker: w.ID, Instruction: inst, During: "sending input", Cause: err}
			}
			sendc = nil
		case <-w.Data.Closed():
			return nil, &WorkerLost{Worker: w.ID, Instruction: inst, During: "processing", Cause: dataLost(w)}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return resp, nil
}

type respOrErr struct {
	resp *fnpb.InstructionResponse
	err  error
}

// sendInput sends a bundle's elements, then its timers: elements that
// reached the stage before the watermark passed a timer are processed
// before it fires, as they arrived (a timer held back by an upstream
// timer's output timestamp must not fire ahead of the element that
// released the hold).
func (h *Harness) sendInput(ctx context.Context, w *fnapi.Worker, inst string, b Bundle) error {
	wr := w.Data.NewWriter(inst, b.InputTransform)
	for _, p := range b.Input {
		if err := wr.Write(ctx, p); err != nil {
			return err
		}
	}
	if err := wr.Close(ctx); err != nil {
		return err
	}
	for _, ts := range b.TimerStreams {
		if err := w.Data.SendTimers(ctx, inst, ts.Transform, ts.Family, b.Timers[ts]); err != nil {
			return err
		}
	}
	return nil
}

// BundleError is an error the SDK reported for a bundle (a user DoFn's
// failure, typically).
type BundleError struct {
	Instruction, Worker, Msg string
}

func (e *BundleError) Error() string {
	return fmt.Sprintf("bundle %s failed in worker %q: %s", e.Instruction, e.Worker, e.Msg)
}

// WorkerLost is a failure of the worker itself (it exited, or a stream
// of it ended) rather than of the bundle's code.
type WorkerLost struct {
	Worker, Instruction string
	During              string // what the runner was doing
	Cause               error
}

func (e *WorkerLost) Error() string {
	where := ""
	if e.Instruction != "" {
		where = " (bundle " + e.Instruction + ")"
	}
	return fmt.Sprintf("worker %q lost while %s%s: %v", e.Worker, e.During, where, e.Cause)
}

func (e *WorkerLost) Unwrap() error { return e.Cause }

// dataLost is why a worker's data stream ended, as its failure.
func dataLost(w *fnapi.Worker) error {
	return &fnapi.StreamError{Worker: w.ID, Stream: "data", Err: errors.Unwrap(w.Data.Err())}
}
