package engine

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/runner/engine/agg"
	"github.com/beam-runner/beam-runner/runner/stagekind"
	"github.com/beam-runner/beam-runner/testsupport/scripttest"
	"github.com/cockroachdb/datadriven"
)

// scriptPipeline is the engine Spec a script's pipeline directive
// declares, with what the script needs to write and read its data.
type scriptPipeline struct {
	spec   Spec
	pcolls []*pcollDecl // in declaration order
	byID   map[string]*pcollDecl
	stage  map[string]int // index in spec.Stages
	// merge are the merge stages of GroupByKeys with a combiner tree, as
	// the SDK stage they stand for: the GroupByKey's output in, its input
	// out.
	trees map[string]StageSpec
}

// parsePipeline reads a pipeline directive: its options, and one line per
// PCollection, stage and TestStream event (testdata/README.md).
func parsePipeline(td *datadriven.TestData) (*scriptPipeline, error) {
	a := newLineArgs(td.Pos, td.CmdArgs)
	p := &scriptPipeline{byID: map[string]*pcollDecl{}, stage: map[string]int{}, trees: map[string]StageSpec{}}
	p.spec = Spec{
		Streaming: a.flag("streaming"), MaxBundles: int(a.int("max-bundles", 1)),
		MinBundleBytes: int(a.int("min-bundle-bytes", 0)), MaxAttempts: int(a.int("max-attempts", 0)),
		StartTime: a.ts("start", 0), PColls: map[string]PCollSpec{}, PaneRoom: int(a.int("pane-room", 0)),
		StreamBundleMs: a.int("bundle-ms", 0),
	}
	if a.flag("flow-control") {
		// flow-start defaults to flow-min, so a script's bound before any
		// rate is its least one.
		lo := a.int("flow-min", 0)
		p.spec.Flow = &FlowControl{MinBytes: lo, MaxBytes: a.int("flow-max", 0), StartBytes: a.int("flow-start", lo)}
	}
	if err := a.finish(); err != nil {
		return nil, err
	}
	for i, line := range strings.Split(td.Input, "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if err := p.line(fmt.Sprintf("%s, line %d", td.Pos, i+1), line); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func (p *scriptPipeline) line(where, line string) error {
	cmd, args, err := datadriven.ParseLine(line)
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	a := newLineArgs(where, args)
	switch cmd {
	case "pcoll":
		p.pcoll(a)
	case "stage":
		p.addStage(a)
	case "event":
		p.event(a)
	default:
		return fmt.Errorf("%s: unknown declaration %q (want pcoll, stage or event)", where, cmd)
	}
	return a.finish()
}

// pcoll declares a PCollection: pcoll ID [kv|bytes|grouped] [window=W]
// [lateness=MS].
func (p *scriptPipeline) pcoll(a *lineArgs) {
	id := a.word("PCollection id")
	d := &pcollDecl{id: id, shape: "kv"}
	for _, s := range []string{"bytes", "grouped", "kv"} {
		if a.flag(s) {
			d.shape = s
		}
	}
	w, err := parseWindowFn(a.str("window", "global"))
	a.fail(err)
	d.win = w
	d.lateness = a.int("lateness", 0)
	if d.shape == "bytes" && w.kind != "global" {
		a.fail(fmt.Errorf("bytes PCollections are globally windowed here"))
	}
	if p.byID[id] != nil {
		a.fail(fmt.Errorf("PCollection %s declared twice", id))
	}
	codec, err := coders.CompileWindowedValue(scriptCoders, d.coderID())
	a.fail(err)
	d.codec = codec
	ps := PCollSpec{Codec: codec}
	if d.shape != "bytes" {
		key, err := coders.Compile(scriptCoders, "bytes")
		a.fail(err)
		ps.Key = key
	}
	p.pcolls = append(p.pcolls, d)
	p.byID[id] = d
	p.spec.PColls[id] = ps
}

var stageKinds = map[string]stagekind.Kind{
	"impulse": stagekind.Impulse, "teststream": stagekind.TestStream, "sdk": stagekind.SDK, "gbk": stagekind.GBK, "flatten": stagekind.Flatten,
}

// addStage declares a stage: stage ID KIND in=... out=... and the kind's
// options.
func (p *scriptPipeline) addStage(a *lineArgs) {
	id := a.word("stage id")
	kindName := a.word("stage kind")
	kind, ok := stageKinds[kindName]
	if !ok {
		a.fail(fmt.Errorf("unknown stage kind %q (want impulse, teststream, sdk, gbk or flatten)", kindName))
		return
	}
	ss := StageSpec{ID: id, Kind: kind, Inputs: a.list("in"), Outputs: a.list("out")}
	switch kind {
	case stagekind.SDK:
		p.sdkStage(a, &ss)
	case stagekind.GBK:
		ss.Agg = p.gbkConfig(a, ss)
		p.combineTree(a, &ss)
	case stagekind.Flatten:
		ss.CopyInputs = a.list("copy")
		if !a.has("copy") {
			ss.CopyInputs = ss.Inputs
		}
	}
	for _, pc := range append(append(append([]string{}, ss.Inputs...), ss.Outputs...), ss.SideInputs...) {
		if p.byID[pc] == nil {
			a.fail(fmt.Errorf("stage %s names undeclared PCollection %q", id, pc))
		}
	}
	if _, dup := p.stage[id]; dup {
		a.fail(fmt.Errorf("stage %s declared twice", id))
	}
	p.stage[id] = len(p.spec.Stages)
	p.spec.Stages = append(p.spec.Stages, ss)
}

func (p *scriptPipeline) sdkStage(a *lineArgs, ss *StageSpec) {
	ss.SideInputs = a.list("side")
	ss.SideWindows = p.sideWindows(ss.SideInputs)
	ss.Splittable, ss.ProbeBundles, ss.Keyed = a.flag("splittable"), a.flag("probe"), a.flag("keyed")
	ss.TimedCheckpoints = ss.Splittable && !a.flag("untimed")
	ss.TimeSorted = a.flag("time-sorted")
	ss.AllowedLateness = a.int("lateness", 0)
	ss.MaxBundles = int(a.int("max-bundles", 0))
	ss.Lanes = int(a.int("lanes", 0))
	events, processing, expiry := a.list("event-timers"), a.list("processing-timers"), a.list("expiry-timers")
	if len(ss.Inputs) != 1 {
		a.fail(fmt.Errorf("sdk stage %s needs one main input (in=)", ss.ID))
		return
	}
	if !ss.Keyed && (len(events)+len(processing)+len(expiry) > 0 || ss.TimeSorted) {
		a.fail(fmt.Errorf("stage %s has timers but is not keyed", ss.ID))
	}
	in := p.byID[ss.Inputs[0]]
	if in == nil {
		return
	}
	tc, err := coders.CompileTimer(scriptCoders, map[coders.WindowKind]string{coders.GlobalWindow: "timer/gw", coders.IntervalWindows: "timer/iw"}[in.win.windowKind()])
	a.fail(err)
	for _, f := range events {
		ss.Timers = append(ss.Timers, TimerSpec{Stream: TimerStream{Transform: ss.ID, Family: f}, Codec: tc})
	}
	for _, f := range processing {
		ss.Timers = append(ss.Timers, TimerSpec{Stream: TimerStream{Transform: ss.ID, Family: f}, Codec: tc, Processing: true})
	}
	for _, f := range expiry {
		ss.Timers = append(ss.Timers, TimerSpec{Stream: TimerStream{Transform: ss.ID, Family: f}, Codec: tc, Expiry: true})
	}
}

var (
	outputTimes = map[string]pipepb.OutputTime_Enum{"end-of-window": pipepb.OutputTime_END_OF_WINDOW,
		"earliest": pipepb.OutputTime_EARLIEST_IN_PANE, "latest": pipepb.OutputTime_LATEST_IN_PANE}
	closings = map[string]pipepb.ClosingBehavior_Enum{"emit-if-nonempty": pipepb.ClosingBehavior_EMIT_IF_NONEMPTY,
		"emit-always": pipepb.ClosingBehavior_EMIT_ALWAYS}
	onTimes = map[string]pipepb.OnTimeBehavior_Enum{"fire-always": pipepb.OnTimeBehavior_FIRE_ALWAYS,
		"fire-if-nonempty": pipepb.OnTimeBehavior_FIRE_IF_NONEMPTY}
)

// gbkConfig reads a GroupByKey's windowing strategy; the windows are its
// input's.
func (p *scriptPipeline) gbkConfig(a *lineArgs, ss StageSpec) agg.Config {
	var c agg.Config
	if len(ss.Inputs) != 1 || p.byID[ss.Inputs[0]] == nil {
		a.fail(fmt.Errorf("gbk stage %s needs one declared input (in=)", ss.ID))
		return c
	}
	if len(ss.Outputs) != 1 {
		a.fail(fmt.Errorf("gbk stage %s needs one output (out=)", ss.ID))
	}
	in := p.byID[ss.Inputs[0]]
	c.Window, c.Merging = in.win.windowKind(), in.win.kind == "sessions"
	if a.flag("accumulating") {
		c.Accumulation = pipepb.AccumulationMode_ACCUMULATING
	}
	c.AllowedLateness = a.int("lateness", 0)
	c.OutputTime = pick(a, "output-time", outputTimes)
	c.Closing = pick(a, "closing", closings)
	c.OnTime = pick(a, "on-time", onTimes)
	if s := a.str("trigger", ""); s != "" {
		t, err := scripttest.ParseTrigger(s)
		a.fail(err)
		c.Trigger = t
	}
	return c
}

// combineTree reads a GroupByKey's combiner tree options: combine=BYTES
// (agg.CombineTree.PassBytes), combine-bundle-bytes=N and
// combine-max-bundles=N. Its tree stage is ID/combine-tree (after the combine's
// Merge transform, which it runs).
func (p *scriptPipeline) combineTree(a *lineArgs, ss *StageSpec) {
	if !a.has("combine") {
		return
	}
	ss.Agg.Combine = &agg.CombineTree{PassBytes: int(a.int("combine", 0)), BundleBytes: int(a.int("combine-bundle-bytes", 0))}
	ss.TreeStage = ss.ID + "/combine-tree"
	ss.TreeMaxBundles = int(a.int("combine-max-bundles", 0))
	p.trees[ss.TreeStage] = StageSpec{ID: ss.TreeStage, Kind: stagekind.SDK, Inputs: ss.Outputs, Outputs: ss.Inputs}
}

// pick reads an option naming one of choices; absent, the zero value
// (UNSPECIFIED: Beam's default).
func pick[E any](a *lineArgs, key string, choices map[string]E) E {
	var zero E
	s := a.str(key, "")
	if s == "" {
		return zero
	}
	v, ok := choices[s]
	if !ok {
		a.fail(fmt.Errorf("%s=%s: not one of %s", key, s, strings.Join(slices.Sorted(maps.Keys(choices)), ", ")))
	}
	return v
}

// event appends a TestStream event: event STAGE add PCOLL ELEMENTS...,
// event STAGE watermark PCOLL TIMESTAMP or event STAGE processing-time MS.
func (p *scriptPipeline) event(a *lineArgs) {
	id := a.word("TestStream stage id")
	i, ok := p.stage[id]
	if !ok || p.spec.Stages[i].Kind != stagekind.TestStream {
		a.fail(fmt.Errorf("event for %q, which is not a declared teststream stage", id))
		return
	}
	var ev Event
	switch kind := a.word("event kind"); kind {
	case "add":
		ev = Event{Kind: AddElements, PColl: a.word("PCollection")}
		if d := p.byID[ev.PColl]; d != nil {
			data, err := d.encode(a.rest())
			a.fail(err)
			ev.Elements = data
		}
	case "watermark":
		ev = Event{Kind: AdvanceWatermark, PColl: a.word("PCollection")}
		wm, err := parseTS(a.word("watermark"))
		a.fail(err)
		ev.Watermark = wm
	case "processing-time":
		ms, err := strconv.ParseInt(strings.TrimPrefix(a.word("milliseconds"), "+"), 10, 64)
		a.fail(err)
		ev = Event{Kind: AdvanceProcessingTime, Advance: ms}
	default:
		a.fail(fmt.Errorf("unknown event %q (want add, watermark or processing-time)", kind))
	}
	p.spec.Stages[i].Events = append(p.spec.Stages[i].Events, ev)
}

// stageSpec is the declared stage id.
func (p *scriptPipeline) stageSpec(id string) (StageSpec, bool) {
	i, ok := p.stage[id]
	if !ok {
		ss, ok := p.trees[id]
		return ss, ok
	}
	return p.spec.Stages[i], true
}

// mainInput is the declared main input of a stage.
func (p *scriptPipeline) mainInput(stage string) (*pcollDecl, error) {
	ss, ok := p.stageSpec(stage)
	if !ok || len(ss.Inputs) == 0 {
		return nil, fmt.Errorf("stage %q has no main input", stage)
	}
	return p.byID[ss.Inputs[0]], nil
}

// sideWindows lays out side inputs' windows as their declarations say;
// the engine does not know sessions.
func (p *scriptPipeline) sideWindows(sides []string) map[string]SideWindowFn {
	out := map[string]SideWindowFn{}
	for _, pc := range sides {
		if d := p.byID[pc]; d != nil {
			switch d.win.kind {
			case "global":
				out[pc] = SideWindowFn{Kind: SideWindowsGlobal}
			case "fixed":
				out[pc] = SideWindowFn{Kind: SideWindowsFixed, Size: d.win.size, Lateness: d.lateness}
			}
		}
	}
	return out
}
