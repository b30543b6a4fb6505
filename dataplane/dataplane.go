// Package dataplane multiplexes one SDK harness's BeamFnData stream into
// per-instruction element and timer streams.
package dataplane

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
)

// frameSize is the target payload of one outgoing Elements message: large
// frames amortise gRPC overhead per element.
const frameSize = 1 << 20

// Stream is the bidirectional data stream of one harness.
type Stream interface {
	Send(*fnpb.Elements) error
	Recv() (*fnpb.Elements, error)
}

// Output collects what one instruction produced, per transform.
type Output struct {
	Data   map[string][][]byte // transform id -> frames, in arrival order
	Timers map[string][][]byte // transform id + "/" + family -> frames
}

// Receiver gathers one instruction's outputs until every expected stream
// has ended.
type Receiver struct {
	mu       sync.Mutex
	out      Output
	pending  map[string]bool // streams not yet ended
	done     chan struct{}
	doneOnce sync.Once
	counter  *atomic.Int64 // if set, adds the data bytes received
}

// CountInto makes the receiver add the bytes of data it receives to c, so
// a caller can watch a running bundle's output grow.
func (r *Receiver) CountInto(c *atomic.Int64) {
	r.mu.Lock()
	r.counter = c
	r.mu.Unlock()
}

func (r *Receiver) add(transform string, data []byte, isLast bool, timers bool, family string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key, m := transform, r.out.Data
	if timers {
		key, m = transform+"/"+family, r.out.Timers
	}
	if len(data) > 0 {
		m[key] = append(m[key], data)
		if r.counter != nil && !timers {
			r.counter.Add(int64(len(data)))
		}
	}
	if isLast {
		delete(r.pending, key)
		if len(r.pending) == 0 {
			r.doneOnce.Do(func() { close(r.done) })
		}
	}
}

// Done is closed once every expected stream has sent is_last.
func (r *Receiver) Done() <-chan struct{} { return r.done }

// Result returns what was received. Call after Done, or after the bundle
// failed, to get the partial output.
func (r *Receiver) Result() Output {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out
}

// Conn is the runner side of one harness's data stream. It exists before
// the harness connects (SDKs open the data stream lazily, on their first
// bundle), so receivers can be registered and sends wait for Serve.
//
// Sends go through one goroutine per stream (gRPC takes one Send at a time)
// that takes a message only while no Send is in progress. A harness that
// stops reading stalls that Send, but every other writer still leaves when
// its context ends, with its message unsent.
type Conn struct {
	attached chan struct{} // closed when a stream attaches
	sendq    chan sendReq  // unbuffered: taken only by an idle sender

	mu        sync.Mutex
	isAttach  bool // a stream attached (guards closing attached once)
	receivers map[string]*Receiver
	err       error
	closed    chan struct{}
}

// NewConn returns a connection waiting for its stream.
func NewConn() *Conn {
	return &Conn{attached: make(chan struct{}), sendq: make(chan sendReq), receivers: map[string]*Receiver{}, closed: make(chan struct{})}
}

// sendReq is one message for the sender and where its Send's result goes.
type sendReq struct {
	msg  *fnpb.Elements
	what string     // names the payload in errors
	done chan error // buffered: the sender never waits on a caller that left
}

// Serve attaches the harness's stream and reads from it until it ends,
// routing data to receivers. Only one stream may attach.
func (c *Conn) Serve(s Stream) error {
	// Check and close under the lock: two streams opening at once must not
	// both close attached (a panic in a gRPC goroutine ends the server).
	c.mu.Lock()
	if c.isAttach {
		c.mu.Unlock()
		return ErrAlreadyAttached
	}
	c.isAttach = true
	close(c.attached)
	c.mu.Unlock()
	defer close(c.closed)
	go c.sendLoop(s)
	for {
		msg, err := s.Recv()
		if err != nil {
			c.mu.Lock()
			c.err = fmt.Errorf("data stream ended: %w", err)
			c.mu.Unlock()
			if errors.Is(err, io.EOF) {
				return nil // the harness closed its side: end the RPC with OK
			}
			return err
		}
		c.route(msg)
	}
}

// ErrAlreadyAttached refuses a second data stream for one worker.
var ErrAlreadyAttached = errors.New("data stream already connected for this worker")

// Err says why the stream ended; nil while it is open.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Closed is closed when the stream has ended.
func (c *Conn) Closed() <-chan struct{} { return c.closed }

func (c *Conn) route(msg *fnpb.Elements) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, d := range msg.GetData() {
		if r := c.receivers[d.GetInstructionId()]; r != nil {
			r.add(d.GetTransformId(), d.GetData(), d.GetIsLast(), false, "")
		}
	}
	for _, t := range msg.GetTimers() {
		if r := c.receivers[t.GetInstructionId()]; r != nil {
			r.add(t.GetTransformId(), t.GetTimers(), t.GetIsLast(), true, t.GetTimerFamilyId())
		}
	}
}

// Expect registers an instruction before it starts; outputs names the data
// sink transforms and timers the "transform/family" streams it will end.
func (c *Conn) Expect(inst string, outputs, timers []string) *Receiver {
	r := &Receiver{
		out:     Output{Data: map[string][][]byte{}, Timers: map[string][][]byte{}},
		pending: map[string]bool{},
		done:    make(chan struct{}),
	}
	for _, o := range outputs {
		r.pending[o] = true
	}
	for _, t := range timers {
		r.pending[t] = true
	}
	if len(r.pending) == 0 {
		close(r.done)
	}
	c.mu.Lock()
	c.receivers[inst] = r
	c.mu.Unlock()
	return r
}

// Forget drops an instruction's receiver; late data for it is discarded.
func (c *Conn) Forget(inst string) {
	c.mu.Lock()
	delete(c.receivers, inst)
	c.mu.Unlock()
}

// Writer sends one instruction's input for one transform in large frames.
type Writer struct {
	c         *Conn
	inst      string
	transform string
	buf       []byte
}

// NewWriter returns a writer for the instruction's data source transform.
func (c *Conn) NewWriter(inst, transform string) *Writer {
	return &Writer{c: c, inst: inst, transform: transform}
}

// Write sends a piece of whole encoded elements. Pieces are coalesced into
// frames of up to frameSize, and a frame never splits a piece: frames end
// at element boundaries, which the Go SDK needs to decode some values
// (grouped iterables) across frames.
func (w *Writer) Write(ctx context.Context, p []byte) error {
	if len(w.buf) > 0 && len(w.buf)+len(p) > frameSize {
		if err := w.flush(ctx, false); err != nil {
			return err
		}
	}
	// A piece of half a frame or more goes out as it is, uncopied (the
	// engine hands over frame-sized chunks of whole elements).
	if len(w.buf) == 0 && len(p) >= frameSize/2 {
		return w.send(ctx, p, false)
	}
	w.buf = append(w.buf, p...)
	return nil
}

// Close flushes and ends the stream with is_last. The end is its own, empty
// Data entry: Python harnesses ignore the payload of an is_last entry.
func (w *Writer) Close(ctx context.Context) error {
	if len(w.buf) > 0 {
		if err := w.flush(ctx, false); err != nil {
			return err
		}
	}
	return w.flush(ctx, true)
}

func (w *Writer) flush(ctx context.Context, last bool) error {
	err := w.send(ctx, w.buf, last)
	w.buf = w.buf[:0]
	return err
}

func (w *Writer) send(ctx context.Context, data []byte, last bool) error {
	return w.c.send(ctx, "input", &fnpb.Elements{Data: []*fnpb.Elements_Data{{
		InstructionId: w.inst, TransformId: w.transform, Data: data, IsLast: last,
	}}})
}

// SendTimers sends encoded timers for one family and ends that stream.
func (c *Conn) SendTimers(ctx context.Context, inst, transform, family string, timers []byte) error {
	// The end is its own entry: Python harnesses ignore an is_last entry's
	// payload.
	var entries []*fnpb.Elements_Timers
	if len(timers) > 0 {
		entries = append(entries, &fnpb.Elements_Timers{InstructionId: inst, TransformId: transform, TimerFamilyId: family, Timers: timers})
	}
	entries = append(entries, &fnpb.Elements_Timers{InstructionId: inst, TransformId: transform, TimerFamilyId: family, IsLast: true})
	return c.send(ctx, "timers", &fnpb.Elements{Timers: entries})
}

// send hands msg to the sender once a stream is attached and no other Send
// is in progress, then waits for its Send. Both waits end with ctx or the
// stream; a caller that leaves during its Send gets ctx's error, and the
// stream's end ends that Send. what names the payload in errors.
func (c *Conn) send(ctx context.Context, what string, msg *fnpb.Elements) error {
	closedErr := fmt.Errorf("data stream closed before sending the %s", what)
	select {
	case <-c.closed:
		return closedErr // an ended stream wins over a sender still looking
	default:
	}
	req := sendReq{msg: msg, done: make(chan error, 1), what: what}
	select {
	case c.sendq <- req:
	case <-ctx.Done():
		return ctx.Err()
	case <-c.closed:
		return closedErr
	}
	select {
	case err := <-req.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-c.closed:
		select {
		case err := <-req.done:
			return err
		default:
			return fmt.Errorf("data stream closed while sending the %s", what)
		}
	}
}

// sendLoop is the stream's one sender, until the stream ends.
func (c *Conn) sendLoop(s Stream) {
	for {
		select {
		case req := <-c.sendq:
			select {
			case <-c.closed:
				// A gRPC stream may not be sent on once its handler returned.
				req.done <- fmt.Errorf("data stream closed before sending the %s", req.what)
			default:
				req.done <- s.Send(req.msg)
			}
		case <-c.closed:
			return
		}
	}
}
