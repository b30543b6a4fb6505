package fnapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	"github.com/beam-runner/beam-runner/dataplane"
	"github.com/beam-runner/beam-runner/stateplane"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Worker is the runner's view of one harness's streams.
type Worker struct {
	ID    string
	Data  *dataplane.Conn
	State *stateplane.Router

	connected chan struct{} // closed when the control stream connects
	failed    chan struct{} // closed when the control stream ends
	send      chan *fnpb.InstructionRequest

	mu struct {
		sync.Mutex
		attached bool
		err      error
		pending  map[string]chan *fnpb.InstructionResponse
	}
	failOnce sync.Once
}

func newWorker(id string) *Worker {
	w := &Worker{
		ID: id, Data: dataplane.NewConn(), State: stateplane.NewRouter(),
		connected: make(chan struct{}), failed: make(chan struct{}),
		send: make(chan *fnpb.InstructionRequest, 64),
	}
	w.mu.pending = map[string]chan *fnpb.InstructionResponse{}
	return w
}

// Connected is closed once the harness has opened its control stream.
func (w *Worker) Connected() <-chan struct{} { return w.connected }

// Failed is closed once the control stream has ended.
func (w *Worker) Failed() <-chan struct{} { return w.failed }

// Err says why the control stream ended.
func (w *Worker) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.mu.err
}

func (w *Worker) serveControl(stream fnpb.BeamFnControl_ControlServer) error {
	w.mu.Lock()
	if w.mu.attached {
		w.mu.Unlock()
		return fmt.Errorf("worker %q already has a control stream", w.ID)
	}
	w.mu.attached = true
	w.mu.Unlock()
	close(w.connected)

	recvErr := make(chan error, 1)
	go func() { recvErr <- w.recvLoop(stream) }()
	for {
		select {
		case req := <-w.send:
			if err := stream.Send(req); err != nil {
				w.fail(&StreamError{Worker: w.ID, Stream: "control", Err: err})
				return err
			}
		case err := <-recvErr:
			w.fail(&StreamError{Worker: w.ID, Stream: "control", Err: err})
			return nil
		case <-w.failed:
			return nil
		}
	}
}

func (w *Worker) recvLoop(stream fnpb.BeamFnControl_ControlServer) error {
	for {
		resp, err := stream.Recv()
		if err != nil {
			return err
		}
		w.mu.Lock()
		ch := w.mu.pending[resp.GetInstructionId()]
		delete(w.mu.pending, resp.GetInstructionId())
		w.mu.Unlock()
		if ch != nil {
			ch <- resp
		}
	}
}

// StreamError says which of a worker's streams ended, and how.
type StreamError struct {
	Worker, Stream string
	Err            error
}

func (e *StreamError) Error() string {
	switch {
	case e.Err == nil || errors.Is(e.Err, io.EOF):
		return fmt.Sprintf("worker %q closed its %s stream", e.Worker, e.Stream)
	case status.Code(e.Err) == codes.Canceled:
		// The server sees a peer that vanished as a cancelled stream.
		return fmt.Sprintf("worker %q's %s stream broke: the connection was lost (did the worker die?)", e.Worker, e.Stream)
	}
	return fmt.Sprintf("worker %q's %s stream failed: %v", e.Worker, e.Stream, e.Err)
}

func (e *StreamError) Unwrap() error { return e.Err }

// Fail marks the worker failed (the runner saw its process exit); the
// first failure's error is kept.
func (w *Worker) Fail(err error) { w.fail(err) }

func (w *Worker) fail(err error) {
	w.failOnce.Do(func() {
		w.mu.Lock()
		w.mu.err = err
		w.mu.Unlock()
		close(w.failed)
	})
}

// Do sends an instruction and waits for its response. The request's
// InstructionId must be unique for this worker.
func (w *Worker) Do(ctx context.Context, req *fnpb.InstructionRequest) (*fnpb.InstructionResponse, error) {
	ch := make(chan *fnpb.InstructionResponse, 1)
	w.mu.Lock()
	w.mu.pending[req.GetInstructionId()] = ch
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.mu.pending, req.GetInstructionId())
		w.mu.Unlock()
	}()
	select {
	case w.send <- req:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-w.failed:
		return nil, w.Err()
	}
	select {
	case resp := <-ch:
		return resp, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-w.failed:
		return nil, w.Err()
	}
}
