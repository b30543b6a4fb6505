package agg

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/coders"
)

// A script drives a GBK one command per line; every pane and probe it
// produces becomes one output line, compared with the expected lines.
//
//	add KEY WIN VALUE TS [PT]   one value; WIN is "g" (global) or START-END
//	wm T | pt T                 advance the watermark / processing time
//	hold | dropped | done | wake  print Hold(), drop counters, Done(), wakeup
//
// T may be "inf" (coders.MaxTimestamp). Panes print as
//
//	KEY WIN TIMING [first] [last] i=INDEX ot=ONTIMEINDEX ts=T [VALUES]
type script struct {
	name string
	cfg  Config
	run  []string
	want []string
}

func runScripts(t *testing.T, cases []script) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := runScript(t, c.cfg, c.run)
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("got:\n\t%s\nwant:\n\t%s", strings.Join(got, "\n\t"), strings.Join(c.want, "\n\t"))
			}
		})
	}
}

func runScript(t *testing.T, cfg Config, lines []string) []string {
	t.Helper()
	g, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	var out []string
	for _, line := range lines {
		out = append(out, step(t, g, strings.Fields(line))...)
		for _, p := range g.Fire() {
			out = append(out, formatPane(t, p))
		}
	}
	return out
}

func step(t *testing.T, g *GBK, f []string) []string {
	t.Helper()
	switch f[0] {
	case "add":
		pt := coders.MinTimestamp
		if len(f) > 5 {
			pt = parseTime(t, f[5])
		}
		if err := g.Add([]byte(f[1]), parseWindow(t, f[2]), []byte(f[3]), parseTime(t, f[4]), pt); err != nil {
			t.Fatalf("%v: %v", f, err)
		}
	case "begin":
		g.BeginInput()
	case "end":
		g.EndInput()
	case "wm":
		g.AdvanceWatermark(parseTime(t, f[1]))
	case "pt":
		g.AdvanceProcessingTime(parseTime(t, f[1]))
	case "hold":
		return []string{"hold=" + formatTime(g.Hold())}
	case "dropped":
		return []string{fmt.Sprintf("dropped late=%d closed=%d", g.DroppedLate(), g.DroppedClosed())}
	case "done":
		return []string{fmt.Sprintf("done=%v", g.Done())}
	case "wake":
		at, ok := g.NextProcessingTimeWakeup()
		if !ok {
			return []string{"wake=none"}
		}
		return []string{"wake=" + formatTime(at)}
	default:
		t.Fatalf("unknown command %q", f[0])
	}
	return nil
}

func parseTime(t *testing.T, s string) int64 {
	t.Helper()
	if s == "inf" {
		return coders.MaxTimestamp
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("bad time %q", s)
	}
	return v
}

func formatTime(ts int64) string {
	switch ts {
	case coders.MaxTimestamp:
		return "inf"
	case coders.EndOfGlobalWindow:
		return "eogw"
	}
	return strconv.FormatInt(ts, 10)
}

func parseWindow(t *testing.T, s string) []byte {
	t.Helper()
	if s == "g" {
		return nil
	}
	se := strings.SplitN(s, "-", 2)
	if len(se) != 2 {
		t.Fatalf("bad window %q", s)
	}
	return iw(parseTime(t, se[0]), parseTime(t, se[1]))
}

func iw(start, end int64) []byte {
	return coders.AppendIntervalWindow(nil, coders.IntervalWindow{Start: start, End: end})
}

func formatWindow(t *testing.T, b []byte) string {
	if len(b) == 0 {
		return "g"
	}
	w, _, err := coders.DecodeIntervalWindow(b)
	if err != nil {
		t.Fatalf("pane window %x: %v", b, err)
	}
	return fmt.Sprintf("%d-%d", w.Start, w.End)
}

var timingNames = map[coders.Timing]string{
	coders.TimingEarly: "EARLY", coders.TimingOnTime: "ON_TIME", coders.TimingLate: "LATE", coders.TimingUnknown: "UNKNOWN",
}

func formatPane(t *testing.T, p Pane) string {
	parts := []string{string(p.Key), formatWindow(t, p.Window), timingNames[p.Info.Timing]}
	if p.Info.IsFirst {
		parts = append(parts, "first")
	}
	if p.Info.IsLast {
		parts = append(parts, "last")
	}
	vals := make([]string, len(p.Values))
	for i, v := range p.Values {
		vals[i] = string(v)
	}
	parts = append(parts, fmt.Sprintf("i=%d ot=%d ts=%s [%s]", p.Info.Index, p.Info.OnTimeIndex, formatTime(p.Timestamp), strings.Join(vals, " ")))
	return strings.Join(parts, " ")
}

// Trigger constructors, shaped like the Go SDK's trigger package.

func tDefault() *pipepb.Trigger {
	return &pipepb.Trigger{Trigger: &pipepb.Trigger_Default_{Default: &pipepb.Trigger_Default{}}}
}
func tAlways() *pipepb.Trigger {
	return &pipepb.Trigger{Trigger: &pipepb.Trigger_Always_{Always: &pipepb.Trigger_Always{}}}
}
func tNever() *pipepb.Trigger {
	return &pipepb.Trigger{Trigger: &pipepb.Trigger_Never_{Never: &pipepb.Trigger_Never{}}}
}
func tCount(n int32) *pipepb.Trigger {
	return &pipepb.Trigger{Trigger: &pipepb.Trigger_ElementCount_{ElementCount: &pipepb.Trigger_ElementCount{ElementCount: n}}}
}
func tRepeat(s *pipepb.Trigger) *pipepb.Trigger {
	return &pipepb.Trigger{Trigger: &pipepb.Trigger_Repeat_{Repeat: &pipepb.Trigger_Repeat{Subtrigger: s}}}
}
func tEOW(early, late *pipepb.Trigger) *pipepb.Trigger {
	return &pipepb.Trigger{Trigger: &pipepb.Trigger_AfterEndOfWindow_{AfterEndOfWindow: &pipepb.Trigger_AfterEndOfWindow{EarlyFirings: early, LateFirings: late}}}
}
func tAll(s ...*pipepb.Trigger) *pipepb.Trigger {
	return &pipepb.Trigger{Trigger: &pipepb.Trigger_AfterAll_{AfterAll: &pipepb.Trigger_AfterAll{Subtriggers: s}}}
}
func tAny(s ...*pipepb.Trigger) *pipepb.Trigger {
	return &pipepb.Trigger{Trigger: &pipepb.Trigger_AfterAny_{AfterAny: &pipepb.Trigger_AfterAny{Subtriggers: s}}}
}
func tEach(s ...*pipepb.Trigger) *pipepb.Trigger {
	return &pipepb.Trigger{Trigger: &pipepb.Trigger_AfterEach_{AfterEach: &pipepb.Trigger_AfterEach{Subtriggers: s}}}
}
func tOrFinally(main, fin *pipepb.Trigger) *pipepb.Trigger {
	return &pipepb.Trigger{Trigger: &pipepb.Trigger_OrFinally_{OrFinally: &pipepb.Trigger_OrFinally{Main: main, Finally: fin}}}
}
func tSyncPT() *pipepb.Trigger {
	return &pipepb.Trigger{Trigger: &pipepb.Trigger_AfterSynchronizedProcessingTime_{AfterSynchronizedProcessingTime: &pipepb.Trigger_AfterSynchronizedProcessingTime{}}}
}
func tPT(tts ...*pipepb.TimestampTransform) *pipepb.Trigger {
	return &pipepb.Trigger{Trigger: &pipepb.Trigger_AfterProcessingTime_{AfterProcessingTime: &pipepb.Trigger_AfterProcessingTime{TimestampTransforms: tts}}}
}
func delay(ms int64) *pipepb.TimestampTransform {
	return &pipepb.TimestampTransform{TimestampTransform: &pipepb.TimestampTransform_Delay_{Delay: &pipepb.TimestampTransform_Delay{DelayMillis: ms}}}
}
func alignTo(period, offset int64) *pipepb.TimestampTransform {
	return &pipepb.TimestampTransform{TimestampTransform: &pipepb.TimestampTransform_AlignTo_{AlignTo: &pipepb.TimestampTransform_AlignTo{Period: period, Offset: offset}}}
}

// goSDK is the windowing strategy the Go SDK writes for WindowInto with a
// trigger (graphx.MarshalWindowingStrategy): discarding by default,
// END_OF_WINDOW, EMIT_IF_NONEMPTY and FIRE_IF_NONEMPTY.
func goSDK(trig *pipepb.Trigger, kind coders.WindowKind) Config {
	return Config{
		Trigger: trig,
		Window:  kind,
		Closing: pipepb.ClosingBehavior_EMIT_IF_NONEMPTY,
		OnTime:  pipepb.OnTimeBehavior_FIRE_IF_NONEMPTY,
	}
}

// adds returns one add line per value, all of one key, window and time.
func adds(key, win string, ts string, values ...string) []string {
	var out []string
	for _, v := range values {
		out = append(out, fmt.Sprintf("add %s %s %s %s", key, win, v, ts))
	}
	return out
}

func lines(parts ...any) []string {
	var out []string
	for _, p := range parts {
		switch x := p.(type) {
		case string:
			out = append(out, x)
		case []string:
			out = append(out, x...)
		}
	}
	return out
}
