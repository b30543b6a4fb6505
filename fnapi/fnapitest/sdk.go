// Package fnapitest is a scripted SDK harness for tests: it dials a real
// Fn API endpoint over gRPC as one worker and lets a test play the SDK's
// side of the control, data and state streams, including misbehaving
// (closing streams early, sending errors or garbage).
package fnapitest

import (
	"context"
	"testing"
	"time"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
)

// SDK is one fake harness connection.
type SDK struct {
	t    testing.TB
	cc   *grpc.ClientConn
	ctx  context.Context
	stop context.CancelFunc

	Control fnpb.BeamFnControl_ControlClient
	Data    fnpb.BeamFnData_DataClient
	State   fnpb.BeamFnState_StateClient
}

// Dial connects as workerID and opens the control stream. Data and state
// streams are opened on demand (SDKs open them lazily).
func Dial(t testing.TB, endpoint, workerID string) *SDK {
	t.Helper()
	cc, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(metadata.AppendToOutgoingContext(context.Background(), "worker_id", workerID))
	s := &SDK{t: t, cc: cc, ctx: ctx, stop: stop}
	t.Cleanup(s.Close)
	if s.Control, err = fnpb.NewBeamFnControlClient(cc).Control(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

// OpenData opens the data stream.
func (s *SDK) OpenData() fnpb.BeamFnData_DataClient {
	s.t.Helper()
	d, err := fnpb.NewBeamFnDataClient(s.cc).Data(s.ctx)
	if err != nil {
		s.t.Fatal(err)
	}
	s.Data = d
	return d
}

// OpenState opens the state stream.
func (s *SDK) OpenState() fnpb.BeamFnState_StateClient {
	s.t.Helper()
	st, err := fnpb.NewBeamFnStateClient(s.cc).State(s.ctx)
	if err != nil {
		s.t.Fatal(err)
	}
	s.State = st
	return st
}

// Close drops every stream and the connection, as a dying process would.
func (s *SDK) Close() {
	s.stop()
	s.cc.Close()
}

// NextInstruction waits for the next instruction on the control stream.
func (s *SDK) NextInstruction() *fnpb.InstructionRequest {
	s.t.Helper()
	req, err := s.Control.Recv()
	if err != nil {
		s.t.Fatalf("control stream: %v", err)
	}
	return req
}

// Respond answers an instruction.
func (s *SDK) Respond(resp *fnpb.InstructionResponse) {
	s.t.Helper()
	if err := s.Control.Send(resp); err != nil {
		s.t.Fatalf("control send: %v", err)
	}
}

// ReadInput reads the data stream until the instruction's transform sent
// is_last, returning the payload bytes in order.
func (s *SDK) ReadInput(inst string) []byte {
	s.t.Helper()
	var out []byte
	for {
		e, err := s.Data.Recv()
		if err != nil {
			s.t.Fatalf("data stream: %v", err)
		}
		for _, d := range e.GetData() {
			if d.GetInstructionId() != inst {
				continue
			}
			out = append(out, d.GetData()...)
			if d.GetIsLast() {
				return out
			}
		}
	}
}

// Within fails the test unless f returns within d: it bounds waits that
// must not hang.
func Within[T any](t testing.TB, d time.Duration, what string, f func() T) T {
	t.Helper()
	ch := make(chan T, 1)
	go func() { ch <- f() }()
	select {
	case v := <-ch:
		return v
	case <-time.After(d):
		t.Fatalf("%s did not return within %v", what, d)
		var zero T
		return zero
	}
}
