package coders

import (
	"bytes"
	"testing"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
)

// Outer-context values (as Python's coder.encode writes TestStream
// elements) become the nested form of the wire coder.
func TestNestedFromOuter(t *testing.T) {
	c := func(urn string, comps ...string) *pipepb.Coder {
		return &pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: urn}, ComponentCoderIds: comps}
	}
	cs := map[string]*pipepb.Coder{
		"str": c(URNStringUTF8), "bytes": c(URNBytes), "int": c(URNVarint),
		"pickled": c("beam:coder:pickled_python:v1"), "lp-pickled": c(URNLengthPrefix, "pickled"),
		"kv-str-bytes":   c(URNKV, "str", "bytes"),
		"kv-str-pickled": c(URNKV, "str", "pickled"), "kv-str-lp": c(URNKV, "str", "lp-pickled"),
		"kv-pickled-int": c(URNKV, "pickled", "int"), "kv-lp-int": c(URNKV, "lp-pickled", "int"),
		"sdk-lp":   c(URNLengthPrefix, "bytes"),
		"null-str": c(URNNullable, "str"),
	}
	for _, tc := range []struct {
		sdk, wire string
		in, want  []byte
	}{
		{"str", "str", []byte("yy"), []byte("\x02yy")},
		{"int", "int", []byte{0x96, 0x01}, []byte{0x96, 0x01}},
		{"pickled", "lp-pickled", []byte("\x04x"), []byte("\x02\x04x")},
		{"kv-str-bytes", "kv-str-bytes", []byte("\x01kvv"), []byte("\x01k\x02vv")},
		{"kv-str-pickled", "kv-str-lp", []byte("\x01k\x04x"), []byte("\x01k\x02\x04x")},
		{"sdk-lp", "sdk-lp", []byte("\x02ab"), []byte("\x02ab")},
		{"null-str", "null-str", []byte("\x01ab"), []byte("\x01\x02ab")},
		{"null-str", "null-str", []byte{0}, []byte{0}},
	} {
		got, err := NestedFromOuter(cs, tc.sdk, tc.wire, tc.in)
		if err != nil || !bytes.Equal(got, tc.want) {
			t.Errorf("%s %x = %x, %v; want %x", tc.sdk, tc.in, got, err, tc.want)
		}
	}
	// An unknown key's outer encoding cannot be split from the value.
	if _, err := NestedFromOuter(cs, "kv-pickled-int", "kv-lp-int", []byte("\x04x\x01")); err == nil {
		t.Error("KV with an unknown key converted; want an error")
	}
	// A value that is not a whole encoding is refused, not passed on.
	if _, err := NestedFromOuter(cs, "kv-str-bytes", "kv-str-bytes", []byte("\x05k")); err == nil {
		t.Error("truncated KV converted; want an error")
	}
}

// OuterSplittable says which outer encodings NestedFromOuter can split:
// all but those of a KV whose key holds a coder the runner does not know.
func TestOuterSplittable(t *testing.T) {
	c := func(urn string, comps ...string) *pipepb.Coder {
		return &pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: urn}, ComponentCoderIds: comps}
	}
	cs := map[string]*pipepb.Coder{
		"str": c(URNStringUTF8), "int": c(URNVarint), "void": c("beam:coders:javasdk:0.1"),
		"lp-void": c(URNLengthPrefix, "void"),
		"kv-void": c(URNKV, "void", "int"), "kv-lp-void": c(URNKV, "lp-void", "int"),
		"kv-str-void": c(URNKV, "str", "void"), "iter-void": c(URNIterable, "void"),
		"kv-iter-void": c(URNKV, "iter-void", "str"), "kv-str-kv-void": c(URNKV, "str", "kv-void"),
		"null-kv-void": c(URNNullable, "kv-void"),
	}
	for id, want := range map[string]bool{
		"str": true, "void": true, "kv-lp-void": true, "kv-str-void": true, "iter-void": true,
		"kv-void": false, "kv-iter-void": false, "kv-str-kv-void": false, "null-kv-void": false,
		"missing": false,
	} {
		if got := OuterSplittable(cs, id); got != want {
			t.Errorf("OuterSplittable(%s) = %v, want %v", id, got, want)
		}
	}
}
