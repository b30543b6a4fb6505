package stateplane

import (
	"errors"
	"io"
	"testing"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
)

type scriptStream struct {
	reqs []*fnpb.StateRequest
	sent []*fnpb.StateResponse
	err  error
}

func (s *scriptStream) Send(r *fnpb.StateResponse) error { s.sent = append(s.sent, r); return nil }
func (s *scriptStream) Recv() (*fnpb.StateRequest, error) {
	if len(s.reqs) == 0 {
		return nil, s.err
	}
	r := s.reqs[0]
	s.reqs = s.reqs[1:]
	return r, nil
}

// A harness closing its side of the stream ends Serve cleanly (gRPC would
// report a returned io.EOF to the harness as status UNKNOWN "EOF"); other
// stream errors are returned.
func TestServeEndsCleanlyWhenHarnessCloses(t *testing.T) {
	r := NewRouter()
	r.Register("b1", pieces{[]byte("v")})
	s := &scriptStream{reqs: []*fnpb.StateRequest{getReq("b1", nil)}, err: io.EOF}
	if err := r.Serve(s); err != nil {
		t.Errorf("Serve after the harness closed = %v, want nil", err)
	}
	if len(s.sent) != 1 {
		t.Errorf("answered %d requests, want 1", len(s.sent))
	}
	broken := errors.New("connection reset")
	if err := r.Serve(&scriptStream{err: broken}); !errors.Is(err, broken) {
		t.Errorf("Serve on a broken stream = %v, want %v", err, broken)
	}
}
