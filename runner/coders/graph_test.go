package coders

import (
	"strings"
	"testing"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
)

func gcoder(urn string, comps ...string) *pipepb.Coder {
	return &pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: urn}, ComponentCoderIds: comps}
}

func TestValidateGraph(t *testing.T) {
	tests := []struct {
		name    string
		coders  map[string]*pipepb.Coder
		wantErr string // "" means valid
	}{
		{"valid kv", map[string]*pipepb.Coder{
			"b": gcoder(URNBytes), "kv": gcoder(URNKV, "b", "b"), "lp": gcoder(URNLengthPrefix, "kv"),
		}, ""},
		{"self-referential length prefix", map[string]*pipepb.Coder{
			"lp": gcoder(URNLengthPrefix, "lp"),
		}, `coder "lp" contains itself: lp -> lp`},
		{"longer cycle", map[string]*pipepb.Coder{
			"a": gcoder(URNKV, "b", "c"), "b": gcoder(URNBytes), "c": gcoder(URNLengthPrefix, "d"), "d": gcoder(URNIterable, "c"),
		}, `contains itself: c -> d -> c`},
		{"unknown component", map[string]*pipepb.Coder{
			"kv": gcoder(URNKV, "b", "missing"), "b": gcoder(URNBytes),
		}, `coder "kv" refers to undefined component coder "missing"`},
		{"nil coder", map[string]*pipepb.Coder{"x": nil}, `coder "x" is empty`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateGraph(tc.coders)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("ValidateGraph = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("ValidateGraph = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}
