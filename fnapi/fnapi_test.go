package fnapi_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	"github.com/beam-runner/beam-runner/fnapi"
	"github.com/beam-runner/beam-runner/fnapi/fnapitest"
	"github.com/beam-runner/beam-runner/testsupport/testwait"
	"google.golang.org/protobuf/proto"
)

const bound = 10 * time.Second

func start(t testing.TB) *fnapi.Server {
	srv, err := fnapi.Start(fnapi.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return srv
}

func connected(t testing.TB, w *fnapi.Worker) {
	t.Helper()
	select {
	case <-w.Connected():
	case <-time.After(bound):
		t.Fatal("worker did not connect", "\n"+testwait.Goroutines())
	}
}

// A second control stream for a worker is refused; the first keeps
// working.
func TestSecondControlStreamRefused(t *testing.T) {
	srv := start(t)
	w := srv.AddWorker("w0")
	sdk := fnapitest.Dial(t, srv.Endpoint(), "w0")
	connected(t, w)
	dup := fnapitest.Dial(t, srv.Endpoint(), "w0")
	if _, err := dup.Control.Recv(); err == nil || !strings.Contains(err.Error(), "already has a control stream") {
		t.Fatalf("second control stream: %v", err)
	}
	respc := make(chan error, 1)
	go func() {
		_, err := w.Do(context.Background(), &fnpb.InstructionRequest{InstructionId: "i1"})
		respc <- err
	}()
	req := sdk.NextInstruction()
	sdk.Respond(&fnpb.InstructionResponse{InstructionId: req.GetInstructionId()})
	if err := fnapitest.Within(t, bound, "Do", func() error { return <-respc }); err != nil {
		t.Fatal(err)
	}
}

// Every stream's end fails the worker, and a waiting Do returns with an
// error that names the stream.
func TestStreamEndsFailWorker(t *testing.T) {
	cases := map[string]struct {
		kill func(*fnapitest.SDK)
		want string
	}{
		"control closed":  {func(s *fnapitest.SDK) { s.Control.CloseSend() }, "control stream"},
		"data closed":     {func(s *fnapitest.SDK) { s.OpenData().CloseSend() }, "data stream"},
		"state closed":    {func(s *fnapitest.SDK) { s.OpenState().CloseSend() }, "state stream"},
		"connection lost": {func(s *fnapitest.SDK) { s.Close() }, "stream"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := start(t)
			w := srv.AddWorker("w0")
			sdk := fnapitest.Dial(t, srv.Endpoint(), "w0")
			connected(t, w)
			errc := make(chan error, 1)
			go func() {
				_, err := w.Do(context.Background(), &fnpb.InstructionRequest{InstructionId: "i1"})
				errc <- err
			}()
			sdk.NextInstruction()
			tc.kill(sdk)
			err := fnapitest.Within(t, bound, "Do", func() error { return <-errc })
			var se *fnapi.StreamError
			if !errors.As(err, &se) || !strings.Contains(err.Error(), tc.want) || se.Worker != "w0" {
				t.Fatalf("Do = %v, want a StreamError of w0 naming the %s", err, tc.want)
			}
			select {
			case <-w.Failed():
			default:
				t.Fatal("worker not failed")
			}
		})
	}
}

// Do is bounded by its context when the SDK never answers.
func TestDoBoundedByContext(t *testing.T) {
	srv := start(t)
	w := srv.AddWorker("w0")
	sdk := fnapitest.Dial(t, srv.Endpoint(), "w0")
	connected(t, w)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	errc := make(chan error, 1)
	go func() { _, err := w.Do(ctx, &fnpb.InstructionRequest{InstructionId: "i1"}); errc <- err }()
	sdk.NextInstruction()
	if err := fnapitest.Within(t, bound, "Do", func() error { return <-errc }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Do = %v, want DeadlineExceeded", err)
	}
}

// FuzzControlResponses sends arbitrary control responses, as a harness
// could, over a real stream while the runner waits on an instruction: no
// panic, responses for other ids are dropped, and the waiting Do gets the
// one with its id.
func FuzzControlResponses(f *testing.F) {
	seed := func(r *fnpb.InstructionResponse) []byte { b, _ := proto.Marshal(r); return b }
	f.Add(seed(&fnpb.InstructionResponse{InstructionId: "i1", Error: "boom"}))
	f.Add(seed(&fnpb.InstructionResponse{InstructionId: "other", Response: &fnpb.InstructionResponse_ProcessBundle{}}))
	f.Add(seed(&fnpb.InstructionResponse{}))
	f.Add([]byte{0x0a, 0xff})
	srv := start(f)
	n := 0
	f.Fuzz(func(t *testing.T, b []byte) {
		var resp fnpb.InstructionResponse
		if proto.Unmarshal(b, &resp) != nil {
			return
		}
		n++
		id := "w" + strings.Repeat("x", n%7) + string(rune('a'+n%26)) + time.Now().Format("150405.000000000")
		w := srv.AddWorker(id)
		sdk := fnapitest.Dial(t, srv.Endpoint(), id)
		connected(t, w)
		errc := make(chan *fnpb.InstructionResponse, 1)
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		defer cancel()
		go func() {
			r, _ := w.Do(ctx, &fnpb.InstructionRequest{InstructionId: "i1"})
			errc <- r
		}()
		sdk.NextInstruction()
		sdk.Respond(&resp)
		sdk.Respond(&fnpb.InstructionResponse{InstructionId: "i1", Error: "final"})
		got := fnapitest.Within(t, bound, "Do", func() *fnpb.InstructionResponse { return <-errc })
		if got.GetInstructionId() != "i1" {
			t.Fatalf("Do got a response for %q", got.GetInstructionId())
		}
		if resp.GetInstructionId() == "i1" && !proto.Equal(got, &resp) {
			t.Fatalf("Do got %v, want the first response for i1 %v", got, &resp)
		}
		sdk.Close()
	})
}
