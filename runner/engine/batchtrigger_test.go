package engine

import (
	"encoding/binary"
	"testing"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/runner/engine/agg"
	"github.com/beam-runner/beam-runner/runner/stagekind"
)

func init() {
	testCoders["iter"] = &pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: "beam:coder:iterable:v1"}, ComponentCoderIds: []string{"bytes"}}
	testCoders["kv-iter"] = &pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: "beam:coder:kv:v1"}, ComponentCoderIds: []string{"bytes", "iter"}}
	testCoders["wv-ikv-iter"] = &pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: "beam:coder:windowed_value:v1"}, ComponentCoderIds: []string{"kv-iter", "iw"}}
}

// A batch GroupByKey sees each window's whole input at once, however many
// chunks it arrives in, so AfterCount(3) fires one pane with all five
// values of window [0,10) (Beam's test_after_count_trigger_batch), not a
// pane of the first three with the rest dropped.
func TestBatchGBKTriggersSeeWholeInput(t *testing.T) {
	e, err := New(Spec{
		MaxBundles: 1,
		PColls: map[string]PCollSpec{
			"imp": {Codec: wvCodec(t, "wv-bytes")},
			"mid": {Codec: wvCodec(t, "wv-ikv"), Key: mustCompile(t, "bytes")},
			"out": {Codec: wvCodec(t, "wv-ikv-iter")},
		},
		Stages: []StageSpec{
			{ID: "imp", Kind: stagekind.Impulse, Outputs: []string{"imp"}},
			{ID: "up", Kind: stagekind.SDK, Inputs: []string{"imp"}, Outputs: []string{"mid"}},
			{ID: "gbk", Kind: stagekind.GBK, Inputs: []string{"mid"}, Outputs: []string{"out"}, Agg: agg.Config{
				Window: coders.IntervalWindows, Trigger: &pipepb.Trigger{Trigger: &pipepb.Trigger_ElementCount_{
					ElementCount: &pipepb.Trigger_ElementCount{ElementCount: 3}}}}},
			{ID: "down", Kind: stagekind.SDK, Inputs: []string{"out"}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	up := onlyBundle(t, e.Ready().Bundles, "up")
	w0 := coders.AppendIntervalWindow(nil, coders.IntervalWindow{Start: 0, End: 10})
	w1 := coders.AppendIntervalWindow(nil, coders.IntervalWindow{Start: 10, End: 20})
	var first, second []byte
	for ts := int64(1); ts <= 3; ts++ {
		first = coders.AppendWindowedValue(first, ts, 1, w0, coders.NoFiringPane, kvElem("A", itoa(ts)))
	}
	for _, ts := range []int64{4, 5} {
		second = coders.AppendWindowedValue(second, ts, 1, w0, coders.NoFiringPane, kvElem("A", itoa(ts)))
	}
	for _, ts := range []int64{10, 11} {
		second = coders.AppendWindowedValue(second, ts, 1, w1, coders.NoFiringPane, kvElem("A", itoa(ts)))
	}
	if err := e.Commit(up.ID, Result{Data: map[string][][]byte{"mid": {first, second}}}); err != nil {
		t.Fatal(err)
	}
	down := onlyBundle(t, e.Ready().Bundles, "down")
	var sizes []int
	err = coders.Each(down.Input, wvCodec(t, "wv-ikv-iter"), func(v *coders.WindowedValue) error {
		_, n, err := coders.LengthPrefixed(v.Elem)
		if err != nil || len(v.Elem) < n+4 {
			t.Fatalf("malformed pane %x: %v", v.Elem, err)
		}
		sizes = append(sizes, int(binary.BigEndian.Uint32(v.Elem[n:])))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(sizes) != 2 || sizes[0] != 5 || sizes[1] != 2 {
		t.Errorf("pane sizes %v, want [5 2]: one pane per window with all its values", sizes)
	}
}
