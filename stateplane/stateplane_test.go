package stateplane

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
)

type pieces [][]byte

func (p pieces) Get(*fnpb.StateKey) ([][]byte, error) { return p, nil }

func getReq(inst string, token []byte) *fnpb.StateRequest {
	return &fnpb.StateRequest{Id: "r", InstructionId: inst,
		StateKey: &fnpb.StateKey{Type: &fnpb.StateKey_Runner_{Runner: &fnpb.StateKey_Runner{Key: []byte("k")}}},
		Request:  &fnpb.StateRequest_Get{Get: &fnpb.StateGetRequest{ContinuationToken: token}}}
}

// A large value comes back in pages whose continuation tokens chain to the
// whole value, each page ending between pieces.
func TestPagingWithContinuationTokens(t *testing.T) {
	var all pieces
	var want []byte
	for i := 0; i < 3000; i++ {
		p := bytes.Repeat([]byte{byte(i)}, 4000)
		all = append(all, p)
		want = append(want, p...)
	}
	r := NewRouter()
	r.Register("b1", all)
	var got []byte
	var token []byte
	pages := 0
	for {
		resp := r.answer(getReq("b1", token))
		if resp.GetError() != "" {
			t.Fatal(resp.GetError())
		}
		page := resp.GetGet().GetData()
		if len(page)%4000 != 0 {
			t.Fatalf("page of %d bytes splits a piece", len(page))
		}
		got = append(got, page...)
		pages++
		if token = resp.GetGet().GetContinuationToken(); len(token) == 0 {
			break
		}
	}
	if pages < 2 || !bytes.Equal(got, want) {
		t.Fatalf("%d pages, %d bytes; want several pages of the %d-byte value", pages, len(got), len(want))
	}
}

// A request naming an instruction that is not running (another bundle's
// finished one, or a made-up id) gets an error response, and a malformed
// token an error, never a panic or another bundle's state.
func TestRequestsForOtherInstructionsAreRefused(t *testing.T) {
	r := NewRouter()
	r.Register("b1", pieces{[]byte("mine")})
	r.Unregister("b1")
	resp := r.answer(getReq("b1", nil))
	if !strings.Contains(resp.GetError(), "b1") || resp.GetGet() != nil {
		t.Fatalf("response for a finished instruction = %v, want an error naming it", resp)
	}
	r.Register("b2", pieces{[]byte("x")})
	if resp := r.answer(getReq("b2", []byte{1, 2, 3})); resp.GetError() == "" {
		t.Fatal("malformed continuation token accepted")
	}
}

// scriptStream replays requests, then ends with err.
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
