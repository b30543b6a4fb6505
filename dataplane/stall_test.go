package dataplane

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"

	"github.com/beam-runner/beam-runner/testsupport/testwait"
)

// stallStream is a harness that has stopped reading: each Send records its
// message, then blocks until release is closed.
type stallStream struct {
	sent    chan *fnpb.Elements
	release chan struct{}
	end     chan struct{} // Recv ends with io.EOF once closed
}

func newStallStream() *stallStream {
	return &stallStream{sent: make(chan *fnpb.Elements, 8), release: make(chan struct{}), end: make(chan struct{})}
}

func (s *stallStream) Send(e *fnpb.Elements) error {
	s.sent <- e
	<-s.release
	return nil
}

func (s *stallStream) Recv() (*fnpb.Elements, error) {
	<-s.end
	return nil, io.EOF
}

// instOf names the instruction a message is for.
func instOf(e *fnpb.Elements) string {
	if d := e.GetData(); len(d) > 0 {
		return d[0].GetInstructionId()
	}
	return e.GetTimers()[0].GetInstructionId()
}

// returnsWithin runs f and fails the test unless it returns within bound.
func returnsWithin(t *testing.T, what string, f func() error) error {
	t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- f() }()
	select {
	case err := <-errc:
		return err
	case <-time.After(bound):
		t.Fatalf("%s still waits after %v\n%s", what, bound, testwait.Goroutines())
		return nil
	}
}

// One stalled Send must not hold other writers past their contexts: a
// writer queued behind it leaves with its deadline and its message unsent,
// and the writer inside the stalled Send leaves when its context ends.
func TestStalledStreamDoesNotHoldWriters(t *testing.T) {
	st := newStallStream()
	c := NewConn()
	served := make(chan error, 1)
	go func() { served <- c.Serve(st) }()

	ctxA, cancelA := context.WithCancel(context.Background())
	defer cancelA()
	errA := make(chan error, 1)
	go func() { errA <- c.SendTimers(ctxA, "stalled", "t", "f", []byte{1}) }()
	select {
	case e := <-st.sent:
		if instOf(e) != "stalled" {
			t.Fatalf("first Send was for %q", instOf(e))
		}
	case <-time.After(bound):
		t.Fatal("the first message never reached Send", "\n"+testwait.Goroutines())
	}

	ctxB, cancelB := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancelB()
	err := returnsWithin(t, "a writer queued behind a stalled Send", func() error {
		return c.NewWriter("queued", "src").Close(ctxB)
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("queued writer = %v, want its deadline", err)
	}

	cancelA()
	if err := returnsWithin(t, "the writer inside the stalled Send", func() error { return <-errA }); !errors.Is(err, context.Canceled) {
		t.Fatalf("stalled writer = %v, want its cancellation", err)
	}

	// Once the harness reads again, sends go through, and the queued
	// writer's message, abandoned before any Send took it, is not among them.
	close(st.release)
	if err := c.SendTimers(ctxT(t), "after", "t", "f", nil); err != nil {
		t.Fatalf("send after the stall: %v", err)
	}
	if e := <-st.sent; instOf(e) != "after" {
		t.Fatalf("after the stall Send got a message for %q, want only the new one", instOf(e))
	}
	close(st.end)
	if err := <-served; err != nil {
		t.Fatalf("Serve = %v", err)
	}
}

// A send to a connection whose stream has ended fails at once, saying so.
func TestSendAfterStreamEnded(t *testing.T) {
	c := NewConn()
	if err := c.Serve(endStream{io.EOF}); err != nil {
		t.Fatal(err)
	}
	err := returnsWithin(t, "a send after the stream ended", func() error {
		return c.SendTimers(context.Background(), "late", "t", "f", nil)
	})
	if err == nil || err.Error() != "data stream closed before sending the timers" {
		t.Fatalf("send after the end = %v, want the stream's closing named", err)
	}
}
