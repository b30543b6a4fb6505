package dataplane

import (
	"bytes"
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/beam-runner/beam-runner/testsupport/testwait"
)

const bound = 10 * time.Second

// dataServer serves BeamFnData over real gRPC on loopback, every stream
// going to one Conn (one worker).
type dataServer struct {
	fnpb.UnimplementedBeamFnDataServer
	conn *Conn
}

func (d *dataServer) Data(s fnpb.BeamFnData_DataServer) error {
	err := d.conn.Serve(s)
	if errors.Is(err, ErrAlreadyAttached) {
		return status.Error(codes.AlreadyExists, err.Error())
	}
	return nil
}

func serve(t *testing.T) (*Conn, fnpb.BeamFnDataClient) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conn := NewConn()
	gs := grpc.NewServer()
	fnpb.RegisterBeamFnDataServer(gs, &dataServer{conn: conn})
	go gs.Serve(lis)
	t.Cleanup(gs.Stop)
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return conn, fnpb.NewBeamFnDataClient(cc)
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	t.Cleanup(cancel)
	return ctx
}

// Many data streams opening at once for one worker: exactly one attaches,
// the others are refused, and nothing panics (closing attached twice did).
func TestConcurrentStreamsForOneWorker(t *testing.T) {
	for round := 0; round < 10; round++ {
		conn, cli := serve(t)
		ctx := ctxT(t)
		const n = 8
		var wg sync.WaitGroup
		codesSeen := make(chan codes.Code, n)
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s, err := cli.Data(ctx)
				if err != nil {
					codesSeen <- status.Code(err)
					return
				}
				// A refused stream ends with AlreadyExists; the attached one
				// stays open until the context ends.
				_, err = s.Recv()
				codesSeen <- status.Code(err)
			}()
		}
		select {
		case <-conn.attached:
		case <-time.After(bound):
			t.Fatal("no stream attached", "\n"+testwait.Goroutines())
		}
		refused := 0
		for i := 0; i < n-1; i++ {
			select {
			case c := <-codesSeen:
				if c != codes.AlreadyExists {
					t.Fatalf("round %d: a second stream ended with %v, want AlreadyExists", round, c)
				}
				refused++
			case <-time.After(bound):
				t.Fatalf("round %d: only %d of %d extra streams refused\n%s", round, refused, n-1, testwait.Goroutines())
			}
		}
	}
}

// Output split over many messages, cutting through elements, with several
// instructions and transforms interleaved, arrives in order per stream.
func TestFramesSplitAcrossMessages(t *testing.T) {
	conn, cli := serve(t)
	ctx := ctxT(t)
	r1 := conn.Expect("i1", []string{"a", "b"}, []string{"t/f"})
	r2 := conn.Expect("i2", []string{"a"}, nil)
	var counted atomic.Int64
	r1.CountInto(&counted)
	s, err := cli.Data(ctx)
	if err != nil {
		t.Fatal(err)
	}
	payload := bytes.Repeat([]byte("0123456789"), 500)
	for off := 0; off < len(payload); off += 333 {
		chunk := payload[off:min(off+333, len(payload))]
		s.Send(&fnpb.Elements{
			Data: []*fnpb.Elements_Data{
				{InstructionId: "i1", TransformId: "a", Data: chunk},
				{InstructionId: "i2", TransformId: "a", Data: chunk},
				{InstructionId: "unknown", TransformId: "a", Data: chunk},
			},
			Timers: []*fnpb.Elements_Timers{{InstructionId: "i1", TransformId: "t", TimerFamilyId: "f", Timers: chunk}},
		})
	}
	s.Send(&fnpb.Elements{
		Data: []*fnpb.Elements_Data{
			{InstructionId: "i1", TransformId: "a", IsLast: true},
			{InstructionId: "i1", TransformId: "b", IsLast: true},
			{InstructionId: "i2", TransformId: "a", IsLast: true},
		},
		Timers: []*fnpb.Elements_Timers{{InstructionId: "i1", TransformId: "t", TimerFamilyId: "f", IsLast: true}},
	})
	for _, r := range []*Receiver{r1, r2} {
		select {
		case <-r.Done():
		case <-time.After(bound):
			t.Fatal("receiver not done after every stream's is_last", "\n"+testwait.Goroutines())
		}
	}
	if got := bytes.Join(r1.Result().Data["a"], nil); !bytes.Equal(got, payload) {
		t.Errorf("i1/a: %d bytes, want the %d sent, in order", len(got), len(payload))
	}
	if got := bytes.Join(r1.Result().Timers["t/f"], nil); !bytes.Equal(got, payload) {
		t.Errorf("i1 timers: %d bytes, want %d", len(got), len(payload))
	}
	if got := bytes.Join(r2.Result().Data["a"], nil); !bytes.Equal(got, payload) {
		t.Errorf("i2/a: %d bytes, want %d", len(got), len(payload))
	}
	if got := counted.Load(); got != int64(len(payload)) {
		t.Errorf("i1 counted %d bytes of data, want %d (its data, not its timers or i2's)", got, len(payload))
	}
}

// A stream that closes early ends the Conn: Closed fires, Err says why,
// and writes fail instead of waiting.
func TestStreamClosingEarly(t *testing.T) {
	conn, cli := serve(t)
	ctx := ctxT(t)
	r := conn.Expect("i1", []string{"a"}, nil)
	s, err := cli.Data(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s.Send(&fnpb.Elements{Data: []*fnpb.Elements_Data{{InstructionId: "i1", TransformId: "a", Data: []byte("part")}}})
	s.CloseSend()
	select {
	case <-conn.Closed():
	case <-time.After(bound):
		t.Fatal("Closed did not fire when the stream ended", "\n"+testwait.Goroutines())
	}
	if conn.Err() == nil {
		t.Error("Err is nil after the stream ended")
	}
	select {
	case <-r.Done():
		t.Error("receiver done without is_last")
	default:
	}
	if got := r.Result().Data["a"]; len(got) != 1 || string(got[0]) != "part" {
		t.Errorf("partial output %q, want [part]", got)
	}
	w := conn.NewWriter("i1", "src")
	if err := w.Write(ctx, []byte("x")); err != nil {
		t.Fatal(err) // buffered
	}
	if err := w.Close(ctx); err == nil {
		t.Error("Close on an ended stream succeeded")
	}
	if err := conn.SendTimers(ctx, "i1", "t", "f", nil); err == nil {
		t.Error("SendTimers on an ended stream succeeded")
	}
}

// Writes before any stream attaches wait only as long as their context.
func TestWriteBeforeAttachBoundedByContext(t *testing.T) {
	conn := NewConn()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	w := conn.NewWriter("i1", "src")
	w.Write(ctx, []byte("x"))
	if err := w.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close = %v, want the context's deadline", err)
	}
	if err := conn.SendTimers(ctx, "i1", "t", "f", nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("SendTimers = %v, want the context's deadline", err)
	}
}

// FuzzRoute feeds arbitrary data-stream messages, as a harness could send
// them, to receivers: no panic, and a receiver is done only once each of
// its streams sent is_last.
func FuzzRoute(f *testing.F) {
	seed := func(e *fnpb.Elements) []byte { b, _ := proto.Marshal(e); return b }
	f.Add(seed(&fnpb.Elements{Data: []*fnpb.Elements_Data{{InstructionId: "i", TransformId: "a", Data: []byte("x"), IsLast: true}}}))
	f.Add(seed(&fnpb.Elements{Timers: []*fnpb.Elements_Timers{{InstructionId: "i", TransformId: "t", TimerFamilyId: "f", IsLast: true}}}))
	f.Add([]byte{0xff, 0x01, 0x02})
	f.Fuzz(func(t *testing.T, b []byte) {
		var e fnpb.Elements
		if proto.Unmarshal(b, &e) != nil {
			return
		}
		c := NewConn()
		r := c.Expect("i", []string{"a"}, []string{"t/f"})
		c.route(&e)
		c.route(&e) // duplicates too
		lastA, lastT := false, false
		for _, d := range e.GetData() {
			lastA = lastA || d.GetInstructionId() == "i" && d.GetTransformId() == "a" && d.GetIsLast()
		}
		for _, tm := range e.GetTimers() {
			lastT = lastT || tm.GetInstructionId() == "i" && tm.GetTransformId() == "t" && tm.GetTimerFamilyId() == "f" && tm.GetIsLast()
		}
		select {
		case <-r.Done():
			if !lastA || !lastT {
				t.Fatalf("receiver done without both is_last (data %v, timers %v)", lastA, lastT)
			}
		default:
			if lastA && lastT {
				t.Fatal("receiver not done after both is_last")
			}
		}
		r.Result()
	})
}
