package harness

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	"github.com/beam-runner/beam-runner/fnapi"
	"github.com/beam-runner/beam-runner/fnapi/fnapitest"
	"github.com/beam-runner/beam-runner/testsupport/testwait"
)

// bound is how long any call may take in these tests: none should wait
// on anything but the events the test causes.
const bound = 10 * time.Second

// setup starts a real Fn API server with one worker and a scripted SDK
// connected to it as that worker.
func setup(t *testing.T) (*Harness, *fnapi.Server, *fnapitest.SDK) {
	t.Helper()
	srv, err := fnapi.Start(fnapi.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	w := srv.AddWorker("w0")
	sdk := fnapitest.Dial(t, srv.Endpoint(), "w0")
	select {
	case <-w.Connected():
	case <-time.After(bound):
		t.Fatal("worker did not connect", "\n"+testwait.Goroutines())
	}
	return New(w), srv, sdk
}

type outcome struct {
	res Result
	err error
}

func process(h *Harness, b Bundle) <-chan outcome {
	ch := make(chan outcome, 1)
	go func() {
		res, err := h.Process(context.Background(), b)
		ch <- outcome{res, err}
	}()
	return ch
}

func wait(t *testing.T, ch <-chan outcome) outcome {
	t.Helper()
	select {
	case o := <-ch:
		return o
	case <-time.After(bound):
		t.Fatal("Process did not return", "\n"+testwait.Goroutines())
		return outcome{}
	}
}

func bundle(input ...[]byte) Bundle {
	return Bundle{Descriptor: "d", InputTransform: "src", Input: input, Outputs: []string{"sink"}}
}

// The SDK echoes the input back split over many messages, each cutting
// across element boundaries, and the runner reassembles it in order.
func TestProcessReassemblesFramesSplitAcrossMessages(t *testing.T) {
	h, _, sdk := setup(t)
	input := [][]byte{bytes.Repeat([]byte("a"), 3000), []byte("bcdef"), bytes.Repeat([]byte("z"), 70000)}
	ch := process(h, bundle(input...))
	req := sdk.NextInstruction()
	sdk.OpenData()
	got := sdk.ReadInput(req.GetInstructionId())
	want := bytes.Join(input, nil)
	if !bytes.Equal(got, want) {
		t.Fatalf("SDK read %d bytes, want %d", len(got), len(want))
	}
	for off := 0; off < len(got); off += 777 {
		end := min(off+777, len(got))
		sdk.Data.Send(&fnpb.Elements{Data: []*fnpb.Elements_Data{{InstructionId: req.GetInstructionId(), TransformId: "sink", Data: got[off:end]}}})
	}
	sdk.Data.Send(&fnpb.Elements{Data: []*fnpb.Elements_Data{{InstructionId: req.GetInstructionId(), TransformId: "sink", IsLast: true}}})
	sdk.Respond(&fnpb.InstructionResponse{InstructionId: req.GetInstructionId(), Response: &fnpb.InstructionResponse_ProcessBundle{ProcessBundle: &fnpb.ProcessBundleResponse{}}})
	o := wait(t, ch)
	if o.err != nil {
		t.Fatal(o.err)
	}
	if out := bytes.Join(o.res.Outputs["sink"], nil); !bytes.Equal(out, want) {
		t.Fatalf("output %d bytes, want %d in order", len(out), len(want))
	}
}

// An SDK that fails a bundle before opening its data stream (a DoFn whose
// module it cannot import) is heard at once: the input send must not wait
// for a data stream that never comes.
func TestProcessErrorBeforeDataStreamDoesNotHang(t *testing.T) {
	h, _, sdk := setup(t)
	ch := process(h, bundle([]byte("x")))
	req := sdk.NextInstruction()
	sdk.Respond(&fnpb.InstructionResponse{InstructionId: req.GetInstructionId(), Error: "ModuleNotFoundError: No module named 'secretmod'"})
	o := wait(t, ch)
	var be *BundleError
	if !errors.As(o.err, &be) || !strings.Contains(o.err.Error(), "ModuleNotFoundError") {
		t.Fatalf("Process = %v, want a BundleError carrying the SDK's message", o.err)
	}
}

// Each way a harness can go away mid-bundle ends Process with WorkerLost,
// promptly.
func TestProcessWorkerLost(t *testing.T) {
	cases := map[string]func(*fnapitest.SDK){
		"connection dropped": func(s *fnapitest.SDK) { s.Close() },
		"control closed":     func(s *fnapitest.SDK) { s.Control.CloseSend() },
		"data closed":        func(s *fnapitest.SDK) { s.Data.CloseSend() },
		"state closed": func(s *fnapitest.SDK) {
			st := s.OpenState()
			st.CloseSend()
		},
	}
	for name, kill := range cases {
		t.Run(name, func(t *testing.T) {
			h, _, sdk := setup(t)
			ch := process(h, bundle([]byte("x")))
			req := sdk.NextInstruction()
			sdk.OpenData()
			sdk.ReadInput(req.GetInstructionId())
			kill(sdk)
			o := wait(t, ch)
			var lost *WorkerLost
			if !errors.As(o.err, &lost) || lost.Worker != "w0" {
				t.Fatalf("Process = %v, want WorkerLost of w0", o.err)
			}
		})
	}
}

// A cancelled context ends Process even when the SDK never answers.
func TestProcessBoundedByContext(t *testing.T) {
	h, _, sdk := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan error, 1)
	go func() { _, err := h.Process(ctx, bundle([]byte("x"))); ch <- err }()
	sdk.NextInstruction()
	cancel()
	err := fnapitest.Within(t, bound, "Process after cancel", func() error { return <-ch })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Process = %v, want context.Canceled", err)
	}
}

// After its worker fails, Rebind moves the harness to a new worker and
// registers every descriptor there again.
func TestRebindReregisters(t *testing.T) {
	h, srv, sdk := setup(t)
	desc := &fnpb.ProcessBundleDescriptor{Id: "d1"}
	errc := make(chan error, 1)
	go func() { errc <- h.Register(context.Background(), desc) }()
	req := sdk.NextInstruction()
	sdk.Respond(&fnpb.InstructionResponse{InstructionId: req.GetInstructionId()})
	if err := fnapitest.Within(t, bound, "Register", func() error { return <-errc }); err != nil {
		t.Fatal(err)
	}
	sdk.Close()

	w1 := srv.AddWorker("w1")
	sdk1 := fnapitest.Dial(t, srv.Endpoint(), "w1")
	<-w1.Connected()
	go func() { errc <- h.Rebind(context.Background(), w1) }()
	req = sdk1.NextInstruction()
	got := req.GetRegister().GetProcessBundleDescriptor()
	if len(got) != 1 || got[0].GetId() != "d1" {
		t.Fatalf("re-registered %v, want d1", got)
	}
	sdk1.Respond(&fnpb.InstructionResponse{InstructionId: req.GetInstructionId()})
	if err := fnapitest.Within(t, bound, "Rebind", func() error { return <-errc }); err != nil {
		t.Fatal(err)
	}
	if h.ID() != "w1" {
		t.Errorf("harness on %s, want w1", h.ID())
	}
}
