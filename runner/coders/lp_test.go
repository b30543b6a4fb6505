package coders

import (
	"strings"
	"testing"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"
)

func spec(urn string, comps ...string) *pipepb.Coder {
	return &pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: urn}, ComponentCoderIds: comps}
}

// pipelineCoders has a user coder the runner cannot parse nested inside
// known composites, as an SDK would send for KV<MyType, []string>.
func pipelineCoders() map[string]*pipepb.Coder {
	return map[string]*pipepb.Coder{
		"custom":  spec("beam:go:coder:custom:v1"),
		"row":     spec("beam:coder:row:v1"),
		"str":     spec(URNStringUTF8),
		"strs":    spec(URNIterable, "str"),
		"kv":      spec(URNKV, "custom", "strs"),
		"gw":      spec(URNGlobalWindow),
		"wv":      spec(URNWindowedValue, "kv", "gw"),
		"known":   spec(URNKV, "str", "strs"),
		"lp":      spec(URNLengthPrefix, "custom"),
		"kvlp":    spec(URNKV, "lp", "str"),
		"rows":    spec(URNIterable, "row"),
		"bad":     spec(URNKV, "str"),
		"dangle":  spec(URNIterable, "nope"),
		"cycle":   spec(URNIterable, "cycle2"),
		"cycle2":  spec(URNKV, "str", "cycle"),
		"custom2": spec("my:custom", "str"),
	}
}

func TestLPUnknownWrapsNestedCustom(t *testing.T) {
	coders := pipelineCoders()
	if _, err := Compile(coders, "wv"); err == nil || !strings.Contains(err.Error(), `"custom"`) ||
		!strings.Contains(err.Error(), "beam:go:coder:custom:v1") {
		t.Fatalf("Compile of unknown coder: err = %v, want one naming id and urn", err)
	}
	id, err := LPUnknown(coders, "wv")
	if err != nil {
		t.Fatal(err)
	}
	wv := coders[id]
	kv := coders[wv.ComponentCoderIds[0]]
	lp := coders[kv.ComponentCoderIds[0]]
	if id == "wv" || wv.ComponentCoderIds[1] != "gw" || kv.ComponentCoderIds[1] != "strs" ||
		lp.GetSpec().GetUrn() != URNLengthPrefix || lp.ComponentCoderIds[0] != "custom" {
		t.Fatalf("LPUnknown(wv) = %q: %v / %v / %v", id, wv, kv, lp)
	}
	if !proto.Equal(coders["wv"], spec(URNWindowedValue, "kv", "gw")) {
		t.Error("LPUnknown modified the original coder")
	}
	if _, err := Compile(coders, id); err != nil {
		t.Errorf("Compile(%q): %v", id, err)
	}
}

func TestLPUnknownIdempotent(t *testing.T) {
	coders := pipelineCoders()
	first, _ := LPUnknown(coders, "wv")
	n := len(coders)
	second, err := LPUnknown(coders, "wv")
	if err != nil || second != first || len(coders) != n {
		t.Fatalf("second call = %q, %v (%d coders, was %d); want %q", second, err, len(coders), n, first)
	}
	if again, _ := LPUnknown(coders, first); again != first || len(coders) != n {
		t.Fatalf("LPUnknown on its own result = %q, want %q", again, first)
	}
}

func TestLPUnknownLeavesKnownAlone(t *testing.T) {
	for _, id := range []string{"known", "lp", "kvlp", "str"} {
		coders := pipelineCoders()
		n := len(coders)
		got, err := LPUnknown(coders, id)
		if err != nil || got != id || len(coders) != n {
			t.Errorf("LPUnknown(%q) = %q, %v, added %d", id, got, err, len(coders)-n)
		}
	}
}

func TestLPUnknownTopLevelAndCollision(t *testing.T) {
	coders := pipelineCoders()
	coders["custom2_lp"] = spec(URNBytes) // a user coder that happens to take the id
	got, err := LPUnknown(coders, "custom2")
	if err != nil || got != "custom2_lp1" || !proto.Equal(coders[got], spec(URNLengthPrefix, "custom2")) {
		t.Fatalf("LPUnknown(custom2) = %q, %v: %v", got, err, coders[got])
	}
	if got, _ := LPUnknown(coders, "rows"); coders[coders[got].ComponentCoderIds[0]].GetSpec().GetUrn() != URNLengthPrefix {
		t.Errorf("row coder not wrapped: %v", coders[got])
	}
}

func TestLPUnknownErrors(t *testing.T) {
	for _, id := range []string{"missing", "bad", "dangle", "cycle"} {
		coders := pipelineCoders()
		if _, err := LPUnknown(coders, id); err == nil {
			t.Errorf("LPUnknown(%q) succeeded", id)
		}
		if _, err := Compile(coders, id); err == nil {
			t.Errorf("Compile(%q) succeeded", id)
		}
	}
	coders := pipelineCoders()
	coders["nilspec"] = nil
	if _, err := LPUnknown(coders, "nilspec"); err == nil {
		t.Error("nil coder accepted")
	}
}

func TestKnown(t *testing.T) {
	for _, u := range []string{URNBytes, URNTimer, URNShardedKey, URNParamWindowedValue, URNCustomWindow} {
		if !Known(u) {
			t.Errorf("Known(%q) = false", u)
		}
	}
	for _, u := range []string{"beam:coder:row:v1", "beam:coder:state_backed_iterable:v1", ""} {
		if Known(u) {
			t.Errorf("Known(%q) = true", u)
		}
	}
}
