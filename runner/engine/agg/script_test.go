package agg

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/testsupport/scripttest"
	"github.com/cockroachdb/datadriven"
)

// TestScripts plays the GroupByKey scenarios of testdata/*.txt, one file
// per topic, in the language testdata/README.md describes: a new GBK per
// "new" directive, then one command per directive, its output the probes
// it asked for and the panes the GBK fired after it.
func TestScripts(t *testing.T) {
	scripttest.Run(t, func() func(*testing.T, *datadriven.TestData) string { return (&gbkScript{}).run })
}

// gbkScript is one script file's state: the GBK of its last "new".
type gbkScript struct {
	d *driver
}

func (s *gbkScript) run(t *testing.T, td *datadriven.TestData) string {
	t.Helper()
	if td.Cmd == "new" {
		return s.newGBK(t, td)
	}
	if s.d == nil {
		td.Fatalf(t, "%s before any new", td.Cmd)
	}
	cmds := [][]string{append([]string{td.Cmd}, argWords(td.CmdArgs)...)}
	if td.Cmd == "add" && len(td.CmdArgs) == 0 {
		// add with its elements as input lines: one add per line.
		cmds = nil
		for _, l := range strings.Split(strings.TrimSpace(td.Input), "\n") {
			cmds = append(cmds, append([]string{"add"}, strings.Fields(l)...))
		}
	} else if td.Input != "" {
		td.Fatalf(t, "%s takes no input lines", td.Cmd)
	}
	var out []string
	for _, c := range cmds {
		lines, err := s.d.do(t, c)
		if err != nil {
			td.Fatalf(t, "%v", err)
		}
		out = append(out, lines...)
	}
	return strings.Join(out, "\n")
}

func (s *gbkScript) newGBK(t *testing.T, td *datadriven.TestData) string {
	cfg, mg, err := parseNew(td.CmdArgs)
	if err != nil {
		td.Fatalf(t, "%v", err)
	}
	g, err := New(cfg)
	if err != nil {
		s.d = nil
		return "error: " + err.Error()
	}
	s.d = &driver{g: g, merge: mg}
	return "ok"
}

func argWords(args []datadriven.CmdArg) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a.String()
	}
	return out
}

var (
	windowKinds = map[string]func(*Config){
		"global":   func(c *Config) { c.Window = coders.GlobalWindow },
		"interval": func(c *Config) { c.Window = coders.IntervalWindows },
		"sessions": func(c *Config) { c.Window, c.Merging = coders.IntervalWindows, true },
	}
	mergeFns    = map[string]merger{"sessions": sessionMerger, "even": evenMerger}
	outputTimes = map[string]pipepb.OutputTime_Enum{"end-of-window": pipepb.OutputTime_END_OF_WINDOW,
		"earliest": pipepb.OutputTime_EARLIEST_IN_PANE, "latest": pipepb.OutputTime_LATEST_IN_PANE}
	closings = map[string]pipepb.ClosingBehavior_Enum{"emit-if-nonempty": pipepb.ClosingBehavior_EMIT_IF_NONEMPTY,
		"emit-always": pipepb.ClosingBehavior_EMIT_ALWAYS}
	onTimes = map[string]pipepb.OnTimeBehavior_Enum{"fire-always": pipepb.OnTimeBehavior_FIRE_ALWAYS,
		"fire-if-nonempty": pipepb.OnTimeBehavior_FIRE_IF_NONEMPTY}
)

// parseNew reads new's arguments into a Config; what is not named keeps
// Config's zero value (a nil trigger, UNSPECIFIED behaviours).
func parseNew(args []datadriven.CmdArg) (Config, merger, error) {
	var c Config
	var mg merger
	for _, a := range args {
		want, v := 1, "" // values: accumulating is a flag, the rest take one
		if a.Key == "accumulating" {
			want = 0
		}
		if len(a.Vals) != want {
			return c, nil, fmt.Errorf("new: %s: want %d values", a, want)
		}
		if want == 1 {
			v = a.Vals[0]
		}
		var err error
		switch a.Key {
		case "accumulating":
			c.Accumulation = pipepb.AccumulationMode_ACCUMULATING
		case "window":
			err = pickInto(a, windowKinds, func(f func(*Config)) { f(&c) })
		case "merge-fn":
			c.Merging, c.SDKWindowMerge = true, true
			err = pickInto(a, mergeFns, func(m merger) { mg = m })
		case "trigger":
			c.Trigger, err = scripttest.ParseTrigger(v)
		case "lateness":
			c.AllowedLateness, err = strconv.ParseInt(v, 10, 64)
		case "output-time":
			err = pickInto(a, outputTimes, func(e pipepb.OutputTime_Enum) { c.OutputTime = e })
		case "closing":
			err = pickInto(a, closings, func(e pipepb.ClosingBehavior_Enum) { c.Closing = e })
		case "on-time":
			err = pickInto(a, onTimes, func(e pipepb.OnTimeBehavior_Enum) { c.OnTime = e })
		default:
			err = fmt.Errorf("unknown argument")
		}
		if err != nil {
			return c, nil, fmt.Errorf("new: %s: %w", a, err)
		}
	}
	return c, mg, nil
}

func pickInto[V any](a datadriven.CmdArg, names map[string]V, set func(V)) error {
	v, ok := names[a.Vals[0]]
	if !ok {
		return fmt.Errorf("unknown %s", a.Key)
	}
	set(v)
	return nil
}

// driver runs the scripts' commands on a GBK. The random scripts of the
// Go tests speak the same commands, one line each.
//
//	add KEY WIN VALUE TS [PT]   one value; WIN is "g" (global) or START-END
//	begin | end                 a batch of input (BeginInput, EndInput)
//	wm T | pt T                 advance the watermark / processing time
//	merge                       answer the GBK's window merge requests
//	hold | dropped | done | wake  print Hold(), drop counters, Done(), wakeup
//
// T may be "inf" (coders.MaxTimestamp). After each command the driver
// fires the GBK; panes print as
//
//	KEY WIN TIMING [first] [last] i=INDEX ot=ONTIMEINDEX ts=T [VALUES]
type driver struct {
	g *GBK
	// merge answers the SDK's window merges; with auto set it answers
	// after every command, so each element is a batch of its own.
	merge merger
	auto  bool
}

// do runs one command and fires; an error is the script's mistake.
func (d *driver) do(t *testing.T, f []string) ([]string, error) {
	t.Helper()
	var out []string
	var err error
	if len(f) == 1 && f[0] == "merge" && d.merge != nil {
		answer(t, d.g, d.merge)
	} else if out, err = step(d.g, f); err != nil {
		return nil, fmt.Errorf("%s: %w", strings.Join(f, " "), err)
	}
	if d.auto {
		answer(t, d.g, d.merge)
	}
	for _, p := range d.g.Fire() {
		s, err := formatPane(p)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// mustDo is do for the Go tests' own scripts.
func (d *driver) mustDo(t *testing.T, line string) []string {
	t.Helper()
	out, err := d.do(t, strings.Fields(line))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// runScript plays lines on a new GBK of cfg and returns all it printed.
func runScript(t *testing.T, cfg Config, lines []string) []string {
	t.Helper()
	g, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	d := &driver{g: g}
	var out []string
	for _, line := range lines {
		out = append(out, d.mustDo(t, line)...)
	}
	return out
}

// arity is how many words each command takes, the command included:
// least and most.
var arity = map[string][2]int{
	"add": {5, 6}, "begin": {1, 1}, "end": {1, 1}, "wm": {2, 2}, "pt": {2, 2},
	"hold": {1, 1}, "dropped": {1, 1}, "done": {1, 1}, "wake": {1, 1},
}

func step(g *GBK, f []string) ([]string, error) {
	n, ok := arity[f[0]]
	if !ok {
		return nil, fmt.Errorf("unknown command %q", f[0])
	}
	if len(f) < n[0] || len(f) > n[1] {
		return nil, fmt.Errorf("%s takes %d to %d words", f[0], n[0], n[1])
	}
	switch f[0] {
	case "add":
		return nil, stepAdd(g, f)
	case "begin":
		g.BeginInput()
	case "end":
		g.EndInput()
	case "wm", "pt":
		ts, err := parseTime(f[1])
		if err != nil {
			return nil, err
		}
		if f[0] == "wm" {
			g.AdvanceWatermark(ts)
		} else {
			g.AdvanceProcessingTime(ts)
		}
	default:
		return []string{probe(g, f[0])}, nil
	}
	return nil, nil
}

func stepAdd(g *GBK, f []string) error {
	pt := coders.MinTimestamp
	var err error
	if len(f) > 5 {
		if pt, err = parseTime(f[5]); err != nil {
			return err
		}
	}
	win, err := parseWindow(f[2])
	if err != nil {
		return err
	}
	ts, err := parseTime(f[4])
	if err != nil {
		return err
	}
	return g.Add([]byte(f[1]), win, []byte(f[3]), ts, pt)
}

func probe(g *GBK, what string) string {
	switch what {
	case "hold":
		return "hold=" + formatTime(g.Hold())
	case "dropped":
		return fmt.Sprintf("dropped late=%d closed=%d", g.DroppedLate(), g.DroppedClosed())
	case "done":
		return fmt.Sprintf("done=%v", g.Done())
	}
	at, ok := g.NextProcessingTimeWakeup()
	if !ok {
		return "wake=none"
	}
	return "wake=" + formatTime(at)
}

func parseTime(s string) (int64, error) {
	if s == "inf" {
		return coders.MaxTimestamp, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("bad time %q", s)
	}
	return v, nil
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

func parseWindow(s string) ([]byte, error) {
	if s == "g" {
		return nil, nil
	}
	se := strings.SplitN(s, "-", 2)
	if len(se) != 2 {
		return nil, fmt.Errorf("bad window %q", s)
	}
	start, err := parseTime(se[0])
	if err != nil {
		return nil, err
	}
	end, err := parseTime(se[1])
	return iw(start, end), err
}

func iw(start, end int64) []byte {
	return coders.AppendIntervalWindow(nil, coders.IntervalWindow{Start: start, End: end})
}

func formatWindow(b []byte) (string, error) {
	if len(b) == 0 {
		return "g", nil
	}
	w, _, err := coders.DecodeIntervalWindow(b)
	if err != nil {
		return "", fmt.Errorf("pane window %x: %w", b, err)
	}
	return fmt.Sprintf("%d-%d", w.Start, w.End), nil
}

var timingNames = map[coders.Timing]string{
	coders.TimingEarly: "EARLY", coders.TimingOnTime: "ON_TIME", coders.TimingLate: "LATE", coders.TimingUnknown: "UNKNOWN",
}

func formatPane(p Pane) (string, error) {
	win, err := formatWindow(p.Window)
	if err != nil {
		return "", err
	}
	parts := []string{string(p.Key), win, timingNames[p.Info.Timing]}
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
	return strings.Join(parts, " "), nil
}

// TestScriptMistakes: a mistake in a script is an error naming it, never
// a panic or a silently different GBK.
func TestScriptMistakes(t *testing.T) {
	for _, args := range []string{"window=fixed", "lateness=soon", "trigger=AfterCount(", "closing=never",
		"merge-fn=odd", "accumulating=yes", "sessions", "on-time"} {
		_, cmdArgs, err := datadriven.ParseLine("new " + args)
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		if _, _, err := parseNew(cmdArgs); err == nil {
			t.Errorf("new %s: no error", args)
		}
	}
	g, err := New(Config{Window: coders.IntervalWindows})
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"frobnicate", "wm", "wm 1 2", "pt soon", "add k 0-10 v", "add k 0-x v 1",
		"add k 0 v 1", "add k 0-10 v 1 later", "merge", "hold now"} {
		if _, err := (&driver{g: g}).do(t, strings.Fields(line)); err == nil {
			t.Errorf("%q: no error", line)
		}
	}
}
