package coders

import (
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/coder"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/exec"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/typex"
)

// hotPath returns codecs and SDK-encoded inputs for the per-element
// operations the runner performs on every data-plane element.
func hotPath(tb testing.TB) (*Codec, []byte, *WindowedValueCodec, []byte, *TimerCodec, []byte) {
	kv := coder.NewKV([]*coder.Coder{coder.NewString(), coder.NewI(coder.NewVarInt())})
	coders, id := marshal(tb, kv)
	kvEnc := sdkEncode(tb, kv, &exec.FullValue{Elm: "some key", Elm2: []int64{1, 2, 3, -4, 5}})

	wvc := coder.NewW(kv, coder.NewIntervalWindow())
	wcoders, wid := marshal(tb, wvc)
	wv, err := CompileWindowedValue(wcoders, wid)
	if err != nil {
		tb.Fatal(err)
	}
	wvEnc := sdkEncode(tb, wvc, &exec.FullValue{Elm: "k", Elm2: []int64{1}, Timestamp: 99,
		Windows: []typex.Window{window.IntervalWindow{Start: 0, End: 100}}, Pane: typex.NoFiringPane()})

	tc := coder.NewT(coder.NewString(), coder.NewIntervalWindow())
	tcoders, tid := marshal(tb, tc)
	timer, err := CompileTimer(tcoders, tid)
	if err != nil {
		tb.Fatal(err)
	}
	tmEnc := sdkEncode(tb, tc, &exec.FullValue{Elm: exec.TimerRecv{Key: &exec.FullValue{Elm: "k"},
		Windows: []typex.Window{window.IntervalWindow{Start: 0, End: 100}}, Pane: typex.NoFiringPane()}})
	return mustCompile(tb, coders, id), kvEnc, wv, wvEnc, timer, tmEnc
}

// TestHotPathZeroAlloc pins the no-allocation promise in a plain test so a
// regression fails CI rather than only showing up in benchmarks.
func TestHotPathZeroAlloc(t *testing.T) {
	kv, kvEnc, wv, wvEnc, tm, tmEnc := hotPath(t)
	var v WindowedValue
	var timer Timer
	buf := make([]byte, 0, 256)
	for name, f := range map[string]func(){
		"Len":          func() { kv.Len(kvEnc) },
		"SplitKV":      func() { kv.SplitKV(kvEnc) },
		"ParseWV":      func() { wv.Parse(wvEnc, &v) },
		"NextWindow":   func() { wv.NextWindow(v.Windows) },
		"ParseTimer":   func() { tm.Parse(tmEnc, &timer) },
		"AppendWV":     func() { AppendWindowedValue(buf[:0], v.Timestamp, v.NumWindows, v.Windows, v.Pane, v.Elem) },
		"AppendTimer":  func() { AppendTimer(buf[:0], &timer) },
		"LenMalformed": func() { kv.Len(kvEnc[:3]) },
	} {
		if a := testing.AllocsPerRun(100, f); a != 0 {
			t.Errorf("%s: %v allocs per run, want 0", name, a)
		}
	}
}

func BenchmarkLen(b *testing.B) {
	kv, kvEnc, _, _, _, _ := hotPath(b)
	b.ReportAllocs()
	b.SetBytes(int64(len(kvEnc)))
	for b.Loop() {
		if _, err := kv.Len(kvEnc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseWindowedValue(b *testing.B) {
	_, _, wv, wvEnc, _, _ := hotPath(b)
	var v WindowedValue
	b.ReportAllocs()
	b.SetBytes(int64(len(wvEnc)))
	for b.Loop() {
		if _, err := wv.Parse(wvEnc, &v); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseTimer(b *testing.B) {
	_, _, _, _, tm, tmEnc := hotPath(b)
	var t Timer
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tm.Parse(tmEnc, &t); err != nil {
			b.Fatal(err)
		}
	}
}
