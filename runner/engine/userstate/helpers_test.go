package userstate

import (
	"strings"
	"testing"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"

	"github.com/beam-runner/beam-runner/runner/coders"
)

const tr = "t1"

func bag(id, key, win string) *fnpb.StateKey {
	return &fnpb.StateKey{Type: &fnpb.StateKey_BagUserState_{BagUserState: &fnpb.StateKey_BagUserState{
		TransformId: tr, UserStateId: id, Key: []byte(key), Window: []byte(win)}}}
}

func mm(id, key, win, mk string) *fnpb.StateKey {
	return &fnpb.StateKey{Type: &fnpb.StateKey_MultimapUserState_{MultimapUserState: &fnpb.StateKey_MultimapUserState{
		TransformId: tr, UserStateId: id, Key: []byte(key), Window: []byte(win), MapKey: []byte(mk)}}}
}

func mmKeys(id, key, win string) *fnpb.StateKey {
	return &fnpb.StateKey{Type: &fnpb.StateKey_MultimapKeysUserState_{MultimapKeysUserState: &fnpb.StateKey_MultimapKeysUserState{
		TransformId: tr, UserStateId: id, Key: []byte(key), Window: []byte(win)}}}
}

// list is an ordered-list key; a nil range leaves the range unset, as
// appends do.
func list(id, key, win string, rng *fnpb.OrderedListRange) *fnpb.StateKey {
	return &fnpb.StateKey{Type: &fnpb.StateKey_OrderedListUserState_{OrderedListUserState: &fnpb.StateKey_OrderedListUserState{
		TransformId: tr, UserStateId: id, Key: []byte(key), Window: []byte(win), Range: rng}}}
}

func rng(start, end int64) *fnpb.OrderedListRange {
	return &fnpb.OrderedListRange{Start: start, End: end}
}

func appendReq(k *fnpb.StateKey, data []byte) *fnpb.StateRequest {
	return &fnpb.StateRequest{StateKey: k, Request: &fnpb.StateRequest_Append{Append: &fnpb.StateAppendRequest{Data: data}}}
}

func clearReq(k *fnpb.StateKey) *fnpb.StateRequest {
	return &fnpb.StateRequest{StateKey: k, Request: &fnpb.StateRequest_Clear{Clear: &fnpb.StateClearRequest{}}}
}

// olEntry encodes an ordered-list entry the Go SDK way, with a varint value.
func olEntry(sortKey, v int64) []byte {
	return coders.AppendVarint(coders.AppendVarint(nil, sortKey), v)
}

// ol concatenates entries, as one Append may carry several.
func ol(kvs ...int64) []byte {
	var b []byte
	for i := 0; i+1 < len(kvs); i += 2 {
		b = append(b, olEntry(kvs[i], kvs[i+1])...)
	}
	return b
}

func compile(t testing.TB, urn string) *coders.Codec {
	t.Helper()
	c, err := coders.Compile(map[string]*pipepb.Coder{"c": {Spec: &pipepb.FunctionSpec{Urn: urn}}}, "c")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// varintLookup serves every ordered list with a varint value coder.
func varintLookup(t testing.TB) Lookup {
	c := compile(t, coders.URNVarint)
	return func(string, string) (*coders.Codec, error) { return c, nil }
}

func mustWrite(t testing.TB, tx *Txn, req *fnpb.StateRequest) {
	t.Helper()
	if _, err := tx.Write(req); err != nil {
		t.Fatalf("Write: %v", err)
	}
}

func mustGet(t testing.TB, tx *Txn, k *fnpb.StateKey) [][]byte {
	t.Helper()
	ps, err := tx.Get(k)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	return ps
}

// show renders pieces as "a|b|c" for readable table expectations.
func show(ps [][]byte) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = string(p)
	}
	return strings.Join(s, "|")
}
