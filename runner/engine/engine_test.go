package engine

import (
	"testing"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/runner/stagekind"
)

// testCoders: c-bytes, c-kv = KV(bytes, bytes), global and interval
// windowed values of both, and a timer coder keyed by bytes.
var testCoders = map[string]*pipepb.Coder{
	"bytes":  {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:bytes:v1"}},
	"kv":     {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:kv:v1"}, ComponentCoderIds: []string{"bytes", "bytes"}},
	"gw":     {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:global_window:v1"}},
	"iw":     {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:interval_window:v1"}},
	"wv-kv":  {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:windowed_value:v1"}, ComponentCoderIds: []string{"kv", "gw"}},
	"wv-ikv": {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:windowed_value:v1"}, ComponentCoderIds: []string{"kv", "iw"}},
	"timer":  {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:timer:v1"}, ComponentCoderIds: []string{"bytes", "gw"}},
}

func wvCodec(t *testing.T, id string) *coders.WindowedValueCodec {
	t.Helper()
	c, err := coders.CompileWindowedValue(testCoders, id)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func kvElem(k, v string) []byte {
	b := coders.AppendLengthPrefixed(nil, []byte(k))
	return coders.AppendLengthPrefixed(b, []byte(v))
}

// globalKV encodes KV elements in the global window at ts.
func globalKV(ts int64, kvs ...string) []byte {
	var buf []byte
	for i := 0; i+1 < len(kvs); i += 2 {
		buf = coders.AppendWindowedValue(buf, ts, 1, nil, coders.NoFiringPane, kvElem(kvs[i], kvs[i+1]))
	}
	return buf
}

func mustCompile(t *testing.T, id string) *coders.Codec {
	t.Helper()
	c, err := coders.Compile(testCoders, id)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func timerBytes(key string, fire, hold int64, tag string) []byte {
	return coders.AppendTimer(nil, &coders.Timer{
		Key: coders.AppendLengthPrefixed(nil, []byte(key)), Tag: []byte(tag), NumWindows: 1,
		Fire: fire, Hold: hold, Pane: coders.NoFiringPane,
	})
}

func keyedEngine(t *testing.T) (*Engine, TimerStream) {
	t.Helper()
	tc, err := coders.CompileTimer(testCoders, "timer")
	if err != nil {
		t.Fatal(err)
	}
	stream := TimerStream{Transform: "pardo", Family: "cb"}
	spec := Spec{
		Streaming: true, MaxBundles: 4,
		PColls: map[string]PCollSpec{
			"src": {Codec: wvCodec(t, "wv-kv"), Key: mustCompile(t, "bytes")},
			"out": {Codec: wvCodec(t, "wv-kv")},
		},
		Stages: []StageSpec{
			{ID: "ts", Kind: stagekind.TestStream, Outputs: []string{"src"}, Events: []Event{
				{Kind: AddElements, PColl: "src", Elements: globalKV(1, "a", "1", "b", "2", "a", "3")},
				{Kind: AdvanceWatermark, PColl: "src", Watermark: 100},
			}},
			{ID: "st", Kind: stagekind.SDK, Keyed: true, Inputs: []string{"src"}, Outputs: []string{"out"},
				Timers: []TimerSpec{{Stream: stream, Codec: tc}}},
		},
	}
	e, err := New(spec)
	if err != nil {
		t.Fatal(err)
	}
	return e, stream
}

// startOne starts an engine on spec and checks that exactly one bundle is
// ready at once.
// oneSplittableBundle starts a splittable stage's one bundle.
func oneSplittableBundle(t *testing.T) (*Engine, []Bundle) {
	t.Helper()
	return startOne(t, splittableSpec(t, 2))
}

func startOne(t *testing.T, spec Spec) (*Engine, []Bundle) {
	t.Helper()
	e, err := New(spec)
	if err != nil {
		t.Fatal(err)
	}
	bs := nextReady(e).Bundles
	if len(bs) != 1 {
		t.Fatalf("Ready = %d bundles, want 1", len(bs))
	}
	return e, bs
}

// splittableSpec: a TestStream of one element feeding a splittable stage,
// processing time starting at 1000.
func splittableSpec(t *testing.T, maxBundles int) Spec {
	t.Helper()
	return Spec{
		Streaming: true, MaxBundles: maxBundles, StartTime: 1000,
		PColls: map[string]PCollSpec{"src": {Codec: wvCodec(t, "wv-kv")}},
		Stages: []StageSpec{
			{ID: "ts", Kind: stagekind.TestStream, Outputs: []string{"src"}, Events: []Event{
				{Kind: AddElements, PColl: "src", Elements: globalKV(1, "a", "1")},
			}},
			{ID: "sdf", Kind: stagekind.SDK, Splittable: true, Inputs: []string{"src"}},
		},
	}
}
