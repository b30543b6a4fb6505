package engine

import (
	"testing"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/coders"
)

func timerCodecWithWindow(t *testing.T, window *pipepb.Coder, comps ...string) *coders.TimerCodec {
	t.Helper()
	m := map[string]*pipepb.Coder{
		"k":     {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:bytes:v1"}},
		"inner": {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:length_prefix:v1"}, ComponentCoderIds: []string{"k"}},
		"w":     window,
		"t":     {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:timer:v1"}, ComponentCoderIds: []string{"k", "w"}},
	}
	tc, err := coders.CompileTimer(m, "t")
	if err != nil {
		t.Fatal(err)
	}
	return tc
}

// An expiry timer names its window as the timer family's coder encodes
// it: a custom window loses the max timestamp the runner's wire form puts
// before it, unless the timer coder is itself custom_window.
func TestTimerWindow(t *testing.T) {
	lp := &pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: "beam:coder:length_prefix:v1"}, ComponentCoderIds: []string{"k"}}
	cw := &pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: coders.URNCustomWindow}, ComponentCoderIds: []string{"inner"}}
	inner := coders.AppendLengthPrefixed(nil, []byte("win"))
	wire := append(coders.AppendTimestamp(nil, 41), inner...)
	if got := timerWindow(wire, coders.CustomWindows, timerCodecWithWindow(t, lp)); string(got) != string(inner) {
		t.Errorf("custom window for a plain timer coder = %q, want %q", got, inner)
	}
	if got := timerWindow(wire, coders.CustomWindows, timerCodecWithWindow(t, cw)); string(got) != string(wire) {
		t.Errorf("custom window for a custom_window timer coder = %q, want %q", got, wire)
	}
	iw := &pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: "beam:coder:interval_window:v1"}}
	win := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9}
	if got := timerWindow(win, coders.IntervalWindows, timerCodecWithWindow(t, iw)); string(got) != string(win) {
		t.Errorf("interval window = %q, want it unchanged", got)
	}
}
