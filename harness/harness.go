// Package harness is the runner's handle on one connected SDK harness:
// register descriptors, process bundles, and collect their outputs.
package harness

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/fnapi"
	"github.com/beam-runner/beam-runner/stateplane"
)

// Harness drives one SDK harness.
type Harness struct {
	w    *fnapi.Worker
	next atomic.Int64

	mu         sync.Mutex
	registered map[string]bool
}

// New wraps a worker whose control stream is (or will be) connected.
func New(w *fnapi.Worker) *Harness {
	return &Harness{w: w, registered: map[string]bool{}}
}

// ID is the worker id.
func (h *Harness) ID() string { return h.w.ID }

// Failed is closed when the harness's control stream has ended.
func (h *Harness) Failed() <-chan struct{} { return h.w.Failed() }

func (h *Harness) instID(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, h.next.Add(1))
}

// Register sends the descriptors the harness has not seen yet.
func (h *Harness) Register(ctx context.Context, descs ...*fnpb.ProcessBundleDescriptor) error {
	var todo []*fnpb.ProcessBundleDescriptor
	h.mu.Lock()
	for _, d := range descs {
		if !h.registered[d.GetId()] {
			todo = append(todo, d)
		}
	}
	h.mu.Unlock()
	if len(todo) == 0 {
		return nil
	}
	resp, err := h.w.Do(ctx, &fnpb.InstructionRequest{
		InstructionId: h.instID("reg"),
		Request:       &fnpb.InstructionRequest_Register{Register: &fnpb.RegisterRequest{ProcessBundleDescriptor: todo}},
	})
	if err != nil {
		return fmt.Errorf("registering descriptors with worker %q: %w", h.w.ID, err)
	}
	if resp.GetError() != "" {
		return fmt.Errorf("worker %q rejected descriptors: %s", h.w.ID, resp.GetError())
	}
	h.mu.Lock()
	for _, d := range todo {
		h.registered[d.GetId()] = true
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
	resp, err := h.w.Do(ctx, &fnpb.InstructionRequest{
		InstructionId: h.instID("fin"),
		Request: &fnpb.InstructionRequest_FinalizeBundle{FinalizeBundle: &fnpb.FinalizeBundleRequest{
			InstructionId: inst,
		}},
	})
	if err != nil {
		return fmt.Errorf("finalizing bundle %s on worker %q: %w", inst, h.w.ID, err)
	}
	if resp.GetError() != "" {
		return fmt.Errorf("finalizing bundle %s on worker %q: %s", inst, h.w.ID, resp.GetError())
	}
	return nil
}

// Process runs one bundle to completion.
func (h *Harness) Process(ctx context.Context, b Bundle) (Result, error) {
	inst := h.instID("b")
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if b.State != nil {
		h.w.State.Register(inst, b.State)
		defer h.w.State.Unregister(inst)
	}
	var timerKeys []string
	for _, ts := range b.TimerStreams {
		timerKeys = append(timerKeys, ts.key())
	}
	recv := h.w.Data.Expect(inst, b.Outputs, timerKeys)
	defer h.w.Data.Forget(inst)
	if b.Started != nil {
		b.Started(inst)
	}

	respc := make(chan respOrErr, 1)
	go func() {
		resp, err := h.w.Do(ctx, &fnpb.InstructionRequest{
			InstructionId: inst,
			Request: &fnpb.InstructionRequest_ProcessBundle{ProcessBundle: &fnpb.ProcessBundleRequest{
				ProcessBundleDescriptorId: b.Descriptor,
				CacheTokens:               b.CacheTokens,
			}},
		})
		respc <- respOrErr{resp, err}
	}()
	sendErr := h.sendInput(ctx, inst, b)
	r := <-respc
	if r.err != nil {
		return Result{}, fmt.Errorf("bundle %s on worker %q: %w", inst, h.w.ID, r.err)
	}
	if msg := r.resp.GetError(); msg != "" {
		return Result{}, &BundleError{Instruction: inst, Worker: h.w.ID, Msg: msg}
	}
	if sendErr != nil {
		return Result{}, fmt.Errorf("bundle %s: sending input: %w", inst, sendErr)
	}
	select {
	case <-recv.Done():
	case <-ctx.Done():
		return Result{}, ctx.Err()
	case <-h.w.Failed():
		return Result{}, fmt.Errorf("bundle %s: worker %q failed: %v", inst, h.w.ID, h.w.Err())
	}
	pb := r.resp.GetProcessBundle()
	got := recv.Result()
	timers := map[TimerStream][][]byte{}
	for _, ts := range b.TimerStreams {
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
	}, nil
}

type respOrErr struct {
	resp *fnpb.InstructionResponse
	err  error
}

func (h *Harness) sendInput(ctx context.Context, inst string, b Bundle) error {
	for _, ts := range b.TimerStreams {
		if err := h.w.Data.SendTimers(ctx, inst, ts.Transform, ts.Family, b.Timers[ts]); err != nil {
			return err
		}
	}
	wr := h.w.Data.NewWriter(inst, b.InputTransform)
	for _, p := range b.Input {
		if err := wr.Write(ctx, p); err != nil {
			return err
		}
	}
	return wr.Close(ctx)
}

// BundleError is an error the SDK reported for a bundle (a user DoFn's
// failure, typically).
type BundleError struct {
	Instruction, Worker, Msg string
}

func (e *BundleError) Error() string {
	return fmt.Sprintf("bundle %s failed in worker %q: %s", e.Instruction, e.Worker, e.Msg)
}
