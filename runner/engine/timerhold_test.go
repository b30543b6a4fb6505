package engine

import (
	"testing"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/runner/stagekind"
)

func init() {
	testCoders["wv-bytes"] = &pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: "beam:coder:windowed_value:v1"}, ComponentCoderIds: []string{"bytes", "gw"}}
}

// An event-time timer does not fire while its key has unprocessed input at
// or before its time, even once the watermark passed it: that input may
// clear or reset it (Beam's test_pardo_et_timer_with_no_firing). Here the
// source finishes (watermark to the end of time) while key a's first bundle
// is running, leaving a@14 pending; the timer that bundle sets at 20 must
// wait for a@14, whose bundle clears it, so it never fires.
func TestEventTimerWaitsForPendingInput(t *testing.T) {
	e, stream := upstreamTimerEngine(t)
	up := onlyBundle(t, e.Ready().Bundles, "up")
	// The source emits a@1 and checkpoints, holding its watermark at 2.
	resid := coders.AppendWindowedValue(nil, 2, 1, nil, coders.NoFiringPane, coders.AppendLengthPrefixed(nil, nil))
	if err := e.Commit(up.ID, Result{Data: map[string][][]byte{"src": {globalKV(1, "a", "1")}},
		Residuals: []Residual{{Element: resid, Hold: 2}}}); err != nil {
		t.Fatal(err)
	}
	var first, resume Bundle // IDs start at 1: 0 is none
	for _, b := range e.Ready().Bundles {
		switch b.Stage {
		case "st":
			first = b
		case "up":
			resume = b
		}
	}
	if first.ID == 0 || resume.ID == 0 {
		t.Fatalf("want a bundle of st (key a) and the source's resumption")
	}
	// The source ends with a@14 while key a's bundle is still running.
	if err := e.Commit(resume.ID, Result{Data: map[string][][]byte{"src": {globalKV(14, "a", "14")}}}); err != nil {
		t.Fatal(err)
	}
	if err := e.Commit(first.ID, Result{Timers: map[TimerStream][][]byte{stream: {timerBytes("a", 20, 20, "")}}}); err != nil {
		t.Fatal(err)
	}
	next := onlyBundle(t, e.Ready().Bundles, "st")
	if len(next.Timers) != 0 || len(next.Input) == 0 {
		t.Fatalf("bundle after the source ended has timers %v and %d input chunks; want a@14 alone, timer held", next.Timers, len(next.Input))
	}
	clear := coders.AppendTimer(nil, &coders.Timer{Key: coders.AppendLengthPrefixed(nil, []byte("a")), NumWindows: 1, Clear: true, Pane: coders.NoFiringPane})
	if err := e.Commit(next.ID, Result{Timers: map[TimerStream][][]byte{stream: {clear}}}); err != nil {
		t.Fatal(err)
	}
	if fired := drainTimers(t, e, stream); len(fired) != 0 {
		t.Errorf("timers fired %v after being cleared", fired)
	}
	if !e.done() {
		t.Error("engine not done")
	}
}

func onlyBundle(t *testing.T, bs []Bundle, stage string) Bundle {
	t.Helper()
	if len(bs) != 1 || bs[0].Stage != stage {
		t.Fatalf("ready bundles %v, want one of stage %s", bs, stage)
	}
	return bs[0]
}

// upstreamTimerEngine: an Impulse feeds an SDK stage "up" writing keyed
// "src", read by the stateful stage "st" with an event-time timer family.
func upstreamTimerEngine(t *testing.T) (*Engine, TimerStream) {
	t.Helper()
	tc, err := coders.CompileTimer(testCoders, "timer")
	if err != nil {
		t.Fatal(err)
	}
	stream := TimerStream{Transform: "pardo", Family: "cb"}
	e, err := New(Spec{
		Streaming: true, MaxBundles: 4,
		PColls: map[string]PCollSpec{
			"imp": {Codec: wvCodec(t, "wv-bytes")},
			"src": {Codec: wvCodec(t, "wv-kv"), Key: mustCompile(t, "bytes")},
			"out": {Codec: wvCodec(t, "wv-kv")},
		},
		Stages: []StageSpec{
			{ID: "imp", Kind: stagekind.Impulse, Outputs: []string{"imp"}},
			{ID: "up", Kind: stagekind.SDK, Inputs: []string{"imp"}, Outputs: []string{"src"}},
			{ID: "st", Kind: stagekind.SDK, Keyed: true, Inputs: []string{"src"}, Outputs: []string{"out"},
				Timers: []TimerSpec{{Stream: stream, Codec: tc}}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return e, stream
}
