package stateplane

import (
	"bytes"
	"strings"
	"testing"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	"google.golang.org/protobuf/proto"
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

// FuzzStateRequests answers arbitrary state requests, as a harness could
// send them, for a registered and an unknown instruction: never a panic,
// every response carries the request's id, and a Get either errs or pages
// within the value.
func FuzzStateRequests(f *testing.F) {
	seed := func(r *fnpb.StateRequest) []byte { b, _ := proto.Marshal(r); return b }
	f.Add(seed(getReq("b1", nil)))
	f.Add(seed(getReq("b1", []byte{0, 0, 0, 0, 0, 0, 0, 9})))
	f.Add(seed(getReq("b1", []byte{1})))
	f.Add(seed(&fnpb.StateRequest{Id: "w", InstructionId: "b1", Request: &fnpb.StateRequest_Append{Append: &fnpb.StateAppendRequest{Data: []byte("x")}}}))
	f.Add(seed(&fnpb.StateRequest{Id: "c", InstructionId: "other", Request: &fnpb.StateRequest_Clear{}}))
	value := pieces{[]byte("ab"), []byte("cde"), []byte("f")}
	r := NewRouter()
	r.Register("b1", value)
	f.Fuzz(func(t *testing.T, b []byte) {
		var req fnpb.StateRequest
		if proto.Unmarshal(b, &req) != nil {
			return
		}
		resp := r.answer(&req)
		if resp.GetId() != req.GetId() {
			t.Fatalf("response id %q for request %q", resp.GetId(), req.GetId())
		}
		if resp.GetError() == "" && req.GetGet() != nil {
			if !bytes.Contains([]byte("abcdef"), resp.GetGet().GetData()) {
				t.Fatalf("page %q is not part of the value", resp.GetGet().GetData())
			}
		}
	})
}
