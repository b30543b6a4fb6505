package engine

import (
	"testing"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/runner/engine/agg"
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

// A TestStream feeds an SDK stage feeding a GBK with the default trigger in
// fixed windows: the GBK output's watermark follows the TestStream's, held
// by the SDK stage's uncommitted bundle, and panes come out on time.
func TestWatermarkPropagationThroughStages(t *testing.T) {
	win := coders.AppendIntervalWindow(nil, coders.IntervalWindow{Start: 0, End: 10})
	elems := coders.AppendWindowedValue(nil, 5, 1, win, coders.NoFiringPane, kvElem("k", "a"))
	spec := Spec{
		Streaming: true, MaxBundles: 1,
		PColls: map[string]PCollSpec{
			"src": {Codec: wvCodec(t, "wv-ikv")},
			"mid": {Codec: wvCodec(t, "wv-ikv"), Key: mustCompile(t, "bytes")},
			"out": {Codec: wvCodec(t, "wv-kv")},
		},
		Stages: []StageSpec{
			{ID: "ts", Kind: stagekind.TestStream, Outputs: []string{"src"}, Events: []Event{
				{Kind: AddElements, PColl: "src", Elements: elems},
				{Kind: AdvanceWatermark, PColl: "src", Watermark: 20},
			}},
			{ID: "sdk", Kind: stagekind.SDK, Inputs: []string{"src"}, Outputs: []string{"mid"}},
			{ID: "gbk", Kind: stagekind.GBK, Inputs: []string{"mid"}, Outputs: []string{"out"},
				Agg: agg.Config{Window: coders.IntervalWindows}},
		},
	}
	e, err := New(spec)
	if err != nil {
		t.Fatal(err)
	}
	bs := e.Ready().Bundles // applies the element event
	if len(bs) != 1 || bs[0].Stage != "sdk" {
		t.Fatalf("Ready = %v, want one sdk bundle", bs)
	}
	if got := e.Watermark("mid"); got > 5 {
		t.Errorf("mid watermark %d passed the in-flight element at 5", got)
	}
	if err := e.Commit(bs[0].ID, Result{Data: map[string][][]byte{"mid": {elems}}}); err != nil {
		t.Fatal(err)
	}
	if bs := e.Ready().Bundles; len(bs) != 0 { // applies the watermark event, then end of stream
		t.Fatalf("unexpected bundles %v", bs)
	}
	e.Ready()
	if !e.done() {
		t.Errorf("engine not done; out watermark %d", e.Watermark("out"))
	}
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

// Each key's elements go to one bundle; a key is never in two bundles at
// once; a timer set twice fires once; an earlier timer set while firing a
// later one still fires first.
func TestKeyedBundlesAndTimerOrder(t *testing.T) {
	e, stream := keyedEngine(t)
	bs := e.Ready().Bundles
	if len(bs) != 2 {
		t.Fatalf("got %d bundles, want one per key (2)", len(bs))
	}
	keysSeen := map[string]int{}
	for _, b := range bs {
		for _, k := range b.Keys {
			keysSeen[k]++
		}
	}
	if len(keysSeen) != 2 {
		t.Fatalf("keys in bundles = %v", keysSeen)
	}
	// Key a sets its timer twice (latest wins, at 50) and key b at 10 and 60.
	timersA := append(timerBytes("a", 70, 1, ""), timerBytes("a", 50, 1, "")...)
	timersB := append(timerBytes("b", 10, 1, ""), timerBytes("b", 60, 1, "x")...)
	for _, b := range bs {
		tm := timersA
		if b.Keys[0] == string(coders.AppendLengthPrefixed(nil, []byte("b"))) {
			tm = timersB
		}
		if err := e.Commit(b.ID, Result{Timers: map[TimerStream][][]byte{stream: {tm}}}); err != nil {
			t.Fatal(err)
		}
	}
	if wm := e.Watermark("out"); wm > 1 {
		t.Errorf("output watermark %d passed the timers' holds at 1", wm)
	}
	fired, expired := drainTimersExpiring(t, e, stream)
	want := []string{"a@50", "b@10", "b@60"}
	if len(fired) != len(want) {
		t.Fatalf("fired %v, want %v", fired, want)
	}
	for i := range want {
		if fired[i] != want[i] {
			t.Fatalf("fired %v, want %v", fired, want)
		}
	}
	if !e.done() {
		t.Error("engine not done after every timer fired")
	}
	// With input complete and no timers left, both keys' state is garbage.
	if len(expired) != 2 {
		t.Errorf("expired state windows = %d, want 2 (keys a and b)", len(expired))
	}
}

// drainTimers runs bundles until none are ready, recording "key@fire" of
// each delivered timer in delivery order per key, keys sorted.
func drainTimers(t *testing.T, e *Engine, stream TimerStream) []string {
	t.Helper()
	fired, _ := drainTimersExpiring(t, e, stream)
	return fired
}

// drainTimersExpiring is drainTimers that also returns the state windows
// Ready reported expired meanwhile.
func drainTimersExpiring(t *testing.T, e *Engine, stream TimerStream) ([]string, []StateWindow) {
	t.Helper()
	tc, _ := coders.CompileTimer(testCoders, "timer")
	var fired []string
	var expired []StateWindow
	for round := 0; round < 10; round++ {
		rd := e.Ready()
		expired = append(expired, rd.Expired...)
		bs := rd.Bundles
		if len(bs) == 0 {
			break
		}
		for _, b := range bs {
			data := b.Timers[stream]
			var tm coders.Timer
			for off := 0; off < len(data); {
				n, err := tc.Parse(data[off:], &tm)
				if err != nil {
					t.Fatal(err)
				}
				k, _, _ := coders.LengthPrefixed(tm.Key)
				fired = append(fired, string(k)+"@"+itoa(tm.Fire))
				off += n
			}
			if err := e.Commit(b.ID, Result{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return sortByKeyStable(fired), expired
}

func itoa(n int64) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}

// sortByKeyStable orders "key@fire" strings by key, keeping each key's
// delivery order.
func sortByKeyStable(xs []string) []string {
	out := append([]string{}, xs...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j][0] < out[j-1][0]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// The split policy offers a bundle of a splittable stage for splitting
// once it has run long enough while the stage has idle capacity, and not
// again until splitMinAge passes; residuals of a split run in a new bundle.
func TestSplitPolicy(t *testing.T) {
	e, bs := oneSplittableBundle(t)
	if got := e.splitCandidates(); len(got) != 0 {
		t.Fatalf("split offered before the bundle ran %dms: %v", splitMinAge, got)
	}
	e.AdvanceProcessingTime(1000 + splitMinAge)
	if got := e.splitCandidates(); len(got) != 1 || got[0] != bs[0].ID {
		t.Fatalf("splitCandidates = %v, want [%d]", got, bs[0].ID)
	}
	if got := e.splitCandidates(); len(got) != 0 {
		t.Fatalf("split offered twice at once: %v", got)
	}
	if _, err := e.ApplySplit(bs[0].ID, SplitResult{FirstResidual: -1, Residuals: []Residual{{Element: globalKV(1, "a", "2")}}}); err != nil {
		t.Fatal(err)
	}
	if more := e.Ready().Bundles; len(more) != 1 {
		t.Fatalf("residual of the split did not start a bundle: %v", more)
	}
}

// An event-time timer never fires before input its key already holds: the
// watermark passing a timer means the input before it has arrived at the
// stage, not that it has been processed, and an SDK need not process a
// bundle's elements before its timers. Here a self-checkpointing upstream
// stage delivers a key's last element in the same commit that completes
// its input, while the key's timer is set.
func TestTimersWaitForTheirKeysPendingInput(t *testing.T) {
	e, stream := upstreamTimerEngine(t)
	one := func(stage string) Bundle {
		t.Helper()
		bs := e.Ready().Bundles
		if len(bs) != 1 || bs[0].Stage != stage {
			t.Fatalf("ready %v, want one bundle of %s", bs, stage)
		}
		return bs[0]
	}
	commit := func(b Bundle, r Result) {
		t.Helper()
		if err := e.Commit(b.ID, r); err != nil {
			t.Fatal(err)
		}
	}
	// up emits a@1 and checkpoints; st takes a@1 and sets a timer at 50.
	up := one("up")
	commit(up, Result{Data: map[string][][]byte{"src": {globalKV(1, "a", "1")}},
		Residuals: []Residual{{Element: Impulse().Chunks[0], Hold: 1}}})
	bs := e.Ready().Bundles
	var st, residual Bundle // IDs start at 1: 0 is none
	for _, b := range bs {
		if b.Stage == "st" {
			st = b
		} else {
			residual = b
		}
	}
	up = residual
	if st.ID == 0 || up.ID == 0 || len(bs) != 2 {
		t.Fatalf("ready %v, want the residual of up and a bundle of st", bs)
	}
	commit(st, Result{Timers: map[TimerStream][][]byte{stream: {timerBytes("a", 50, 1, "")}}})
	// The residual emits a@2 and finishes: up's input is complete.
	commit(up, Result{Data: map[string][][]byte{"src": {globalKV(2, "a", "2")}}})
	in := one("st")
	if len(in.Input) == 0 || len(in.Timers[stream]) != 0 {
		t.Fatalf("bundle with %d input chunks and timers %x; want a@2 alone first", len(in.Input), in.Timers[stream])
	}
	commit(in, Result{})
	if fired := drainTimers(t, e, stream); len(fired) != 1 || fired[0] != "a@50" {
		t.Fatalf("fired %v after the input, want [a@50]", fired)
	}
}

// oneSplittableBundle starts an engine whose splittable stage runs one
// bundle at processing time 1000, with room for a second.
func oneSplittableBundle(t *testing.T) (*Engine, []Bundle) {
	t.Helper()
	return startOne(t, splittableSpec(t, 2))
}

// startOne starts an engine on spec and checks that exactly one bundle is
// ready at once.
func startOne(t *testing.T, spec Spec) (*Engine, []Bundle) {
	t.Helper()
	e, err := New(spec)
	if err != nil {
		t.Fatal(err)
	}
	bs := e.Ready().Bundles
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
