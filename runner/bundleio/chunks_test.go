package bundleio

import (
	"bytes"
	"testing"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/coders"
)

// bytesInGlobalWindow is the codec of byte strings in the global window.
func bytesInGlobalWindow(t *testing.T) *coders.WindowedValueCodec {
	t.Helper()
	cs := map[string]*pipepb.Coder{
		"b":  {Spec: &pipepb.FunctionSpec{Urn: coders.URNBytes}},
		"gw": {Spec: &pipepb.FunctionSpec{Urn: coders.URNGlobalWindow}},
		"wv": {Spec: &pipepb.FunctionSpec{Urn: coders.URNWindowedValue}, ComponentCoderIds: []string{"b", "gw"}},
	}
	wv, err := coders.CompileWindowedValue(cs, "wv")
	if err != nil {
		t.Fatal(err)
	}
	return wv
}

// TestElementChunks: frames that end on element boundaries are kept as
// they are, without a copy; frames an element spans are joined until the
// element ends; a truncated stream still reaches the engine to be reported.
func TestElementChunks(t *testing.T) {
	wv := bytesInGlobalWindow(t)
	elem := func(s string) []byte {
		return coders.AppendWindowedValue(nil, 0, 1, nil, coders.NoFiringPane, coders.AppendLengthPrefixed(nil, []byte(s)))
	}
	a, b, c := elem("aaaa"), elem("bbbbbbbb"), elem("cc")
	whole := append(append([]byte(nil), a...), b...)
	// c's bytes split over three frames, then one whole frame.
	frames := [][]byte{whole, c[:3], c[3:5], c[5:], a}
	got := Codec{wv}.Chunks(append([][]byte(nil), frames...))
	if len(got) != 3 || &got[0][0] != &whole[0] || !bytes.Equal(got[1], c) || &got[2][0] != &a[0] {
		t.Fatalf("chunks %q: want the first and last frames as they are and c joined", got)
	}
	trunc := Codec{wv}.Chunks([][]byte{a, c[:4]})
	if len(trunc) != 2 || !bytes.Equal(trunc[1], c[:4]) {
		t.Errorf("truncated stream gave %q, want its tail kept for the engine to report", trunc)
	}
}

// TestSpan counts the elements of several chunks and spans their event
// times, whichever chunk holds the least and greatest.
func TestSpan(t *testing.T) {
	wv := bytesInGlobalWindow(t)
	at := func(ts int64) []byte {
		return coders.AppendWindowedValue(nil, ts, 1, nil, coders.NoFiringPane, coders.AppendLengthPrefixed(nil, []byte("x")))
	}
	chunks := [][]byte{append(at(5), at(9)...), at(-3), at(7)}
	if n, lo, hi := (Codec{wv}).Span(chunks); n != 4 || lo != -3 || hi != 9 {
		t.Errorf("Span = %d [%d, %d], want 4 [-3, 9]", n, lo, hi)
	}
	if n, lo, hi := (Codec{wv}).Span(nil); n != 0 || lo != 0 || hi != 0 {
		t.Errorf("Span(nil) = %d [%d, %d], want 0 [0, 0]", n, lo, hi)
	}
}
