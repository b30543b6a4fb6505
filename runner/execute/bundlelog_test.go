package execute

import (
	"strings"
	"testing"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/runner/plan"
)

// The debug line's timers: those set spanned by fire and hold time,
// clears counted apart, and bytes it cannot read named, not fatal.
func TestTimersText(t *testing.T) {
	spec := func(urn string, comps ...string) *pipepb.Coder {
		return &pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: urn}, ComponentCoderIds: comps}
	}
	r := &run{plan: &plan.Plan{Components: &pipepb.Components{Coders: map[string]*pipepb.Coder{
		"b": spec(coders.URNBytes), "gw": spec(coders.URNGlobalWindow), "t": spec(coders.URNTimer, "b", "gw"),
	}}}}
	timer := func(fire, hold int64, clear bool) []byte {
		return coders.AppendTimer(nil, &coders.Timer{Key: coders.AppendLengthPrefixed(nil, []byte("k")),
			NumWindows: 1, Clear: clear, Fire: fire, Hold: hold, Pane: coders.NoFiringPane})
	}
	enc := append(append(timer(9, 9, false), timer(0, 0, true)...), timer(5, 3, false)...)
	want := "f: 2 set fire [00:00:00.005, 00:00:00.009] hold [00:00:00.003, 00:00:00.009], 1 cleared"
	if got := r.timersText("f", "t", enc); got != want {
		t.Errorf("timersText = %q, want %q", got, want)
	}
	if got := r.timersText("f", "t", enc[:len(enc)-3]); !strings.Contains(got, "at byte") {
		t.Errorf("timersText of truncated timers = %q, want where it stopped", got)
	}
	if got := r.timersText("f", "missing", enc); !strings.HasPrefix(got, "f: ") {
		t.Errorf("timersText with an unknown coder = %q, want the family and the error", got)
	}
}

func TestWmText(t *testing.T) {
	for ms, want := range map[int64]string{
		coders.MinTimestamp: "-inf", coders.MaxTimestamp: "+inf", coders.EndOfGlobalWindow: "end-of-global",
		0: "0", 1_700_000_000_123: "22:13:20.123",
	} {
		if got := wmText(ms); got != want {
			t.Errorf("wmText(%d) = %q, want %q", ms, got, want)
		}
	}
}
