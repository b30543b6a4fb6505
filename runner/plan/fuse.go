package plan

import (
	"fmt"
	"maps"
	"slices"
	"sort"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/runner/stagekind"
	"google.golang.org/protobuf/proto"
)

// SideInput is one side input read by a transform of an SDK stage.
type SideInput struct {
	Transform, Tag, PColl string
	URN                   string // access pattern: iterable or multimap
}

// Stage is a unit of execution whose inputs and outputs the runner holds.
type Stage struct {
	ID   string
	Kind stagekind.Kind
	Env  string
	// Transforms are the leaf transforms, in topological order.
	Transforms []string
	// Inputs are the materialised PCollections read: the main input of an
	// SDK stage, or a runner stage's inputs (a flatten's, in order).
	Inputs []string
	// SideInputs are read through the state API by an SDK stage.
	SideInputs []SideInput
	// Outputs are the PCollections this stage materialises.
	Outputs []string
	// FlattenSinks send an SDK stage's output straight into a flatten's
	// output, encoded with the flatten output's coder: flatten inputs may
	// have different coders (Python's CoGroupByKey), and the runner never
	// transcodes.
	FlattenSinks []FlattenSink
	// CopyInputs are a flatten's inputs produced by runner stages, whose
	// bytes the flatten copies to its output.
	CopyInputs []string
	// Stateful is set when the stage's first transform uses state or
	// timers: its input is keyed by the runner, one bundle per key at a time.
	Stateful bool
	// TimeSorted is set when that transform requires its input sorted by
	// event time (RequiresTimeSortedInput).
	TimeSorted bool
	// Timers are the timer families of the stage's transforms.
	Timers []TimerFamily
	// Truncate is the truncation transform of the splittable DoFn this
	// stage starts with, and TruncateOut its output; empty otherwise.
	Truncate, TruncateOut string
	// Deps are the stages that must finish first.
	Deps []string
	// Windowing is the windowing strategy of an SDK or GBK stage's main
	// input (for a GBK, the one checkGBKWindowing accepted).
	Windowing *pipepb.WindowingStrategy
	// InputCoders replace, for the stage's SDK, the coders of PCollections
	// it reads whose coders that SDK does not know (foreign.go), and the
	// GroupByKey output a Python stage reads (statebacked.go).
	InputCoders map[string]InputCoder
	// WindowMergeStage is, for a GroupByKey whose windows the SDK merges, the
	// stage that runs the WindowFn's merge_windows (mergewin.go).
	WindowMergeStage string
	// TreeTransform is, for the GroupByKey of a lifted combine, the
	// combine's Merge (merge-accumulators) transform, which the runner
	// also runs on partial groups (its combiner tree, combtree.go);
	// empty otherwise.
	TreeTransform string
}

// Plan is a pipeline ready to execute.
type Plan struct {
	Components *pipepb.Components
	Stages     []*Stage // topological order
	// Consumers counts, per materialised PCollection, the stages reading it,
	// so the engine can release it once they are done.
	Consumers map[string]int
	// Wire is, per PCollection, the windowed value coder its elements are
	// exchanged and stored with.
	Wire map[string]string
	// SDKCoder is, per PCollection, the element coder the SDK gave it,
	// before the runner wrapped unknown coders in length prefixes.
	SDKCoder map[string]string
}

type fuser struct {
	g        *graph
	producer map[string]string // pcoll -> leaf transform
	stageOf  map[string]*Stage // leaf transform -> stage
	stages   []*Stage
	deps     map[*Stage]map[*Stage]bool
}

// Options are what planning needs from the rest of the runner.
type Options struct {
	// Startable reports whether the runner can start workers for an
	// environment URN; nil accepts every environment. Passed in so the
	// plan does not depend on worker/.
	Startable func(envURN string) bool
	// Grouping checks a GroupByKey's windowing strategy (trigger,
	// accumulation, timestamp combiner) against what the runner can group,
	// given the kind of its windows; nil accepts every strategy. Passed in
	// so the plan does not depend on the engine.
	Grouping func(ws *pipepb.WindowingStrategy, kind coders.WindowKind) error
	// StartStage names transforms, by id, that must each start a stage
	// (a fusion constraint): a job started from a savepoint keeps the
	// PCollections that hold saved input materialised, as the stage
	// boundaries they were. Ids the pipeline lacks are ignored.
	StartStage []string
}

// Build validates and plans a pipeline, accepting every environment.
func Build(p *pipepb.Pipeline) (*Plan, error) { return BuildWith(p, Options{}) }

// BuildWith validates and plans a pipeline.
func BuildWith(p *pipepb.Pipeline, opts Options) (*Plan, error) {
	if err := checkRequirements(p); err != nil {
		return nil, err
	}
	g, err := newGraph(p)
	if err != nil {
		return nil, err
	}
	if err := checkEnvironmentsAndWindows(g, opts); err != nil {
		return nil, err
	}
	for _, id := range opts.StartStage {
		g.breakBefore[id] = true
	}
	f := &fuser{g: g, producer: map[string]string{}, stageOf: map[string]*Stage{}, deps: map[*Stage]map[*Stage]bool{}}
	for _, id := range g.leaves {
		for _, pc := range g.comps.GetTransforms()[id].GetOutputs() {
			f.producer[pc] = id
		}
	}
	for _, id := range g.leaves {
		if err := f.place(id); err != nil {
			return nil, err
		}
	}
	f.markOutputs()
	return f.finish()
}

func (f *fuser) transform(id string) *pipepb.PTransform { return f.g.comps.GetTransforms()[id] }

func (f *fuser) place(id string) error {
	t := f.transform(id)
	urn := t.GetSpec().GetUrn()
	switch urn {
	case URNImpulse:
		f.newStage(id, stagekind.Impulse, "", nil)
	case URNGBK:
		in, ok := onlyValue(t.GetInputs())
		if !ok {
			return fmt.Errorf("GroupByKey %q must have exactly one input", t.GetUniqueName())
		}
		f.newStage(id, stagekind.GBK, "", []string{in})
	case URNFlatten:
		if f.g.sdkFlattens[id] {
			return f.placeSDK(id, t)
		}
		f.newStage(id, stagekind.Flatten, "", sortedValues(t.GetInputs()))
	case URNTestStream, URNTestStreamGo:
		f.newStage(id, stagekind.TestStream, "", nil)
	case "":
		// An empty composite produces nothing.
	default:
		return f.placeSDK(id, t)
	}
	return nil
}

func (f *fuser) placeSDK(id string, t *pipepb.PTransform) error {
	main, sides, err := f.inputs(id, t)
	if err != nil {
		return err
	}
	stateful, sorted := isStateful(t)
	if s := f.stageOf[f.producer[main]]; s != nil && !stateful && f.canFuse(id, t, s, sides) {
		s.Transforms = append(s.Transforms, id)
		f.stageOf[id] = s
	} else {
		f.newStage(id, stagekind.SDK, t.GetEnvironmentId(), []string{main})
		f.stageOf[id].Stateful, f.stageOf[id].TimeSorted = stateful, sorted
		if tr, ok := f.g.truncates[id]; ok {
			f.stageOf[id].Truncate, f.stageOf[id].TruncateOut = tr.transform, tr.out
		}
	}
	s := f.stageOf[id]
	for _, si := range sides {
		s.SideInputs = append(s.SideInputs, si)
		f.addDep(s, f.stageOf[f.producer[si.PColl]])
	}
	return nil
}

// isStateful reports whether a ParDo uses state or timers, or needs its
// input sorted by time, all of which the runner keys its input for; and
// whether it needs it sorted.
func isStateful(t *pipepb.PTransform) (stateful, sorted bool) {
	if t.GetSpec().GetUrn() != URNParDo {
		return false, false
	}
	var pl pipepb.ParDoPayload
	if proto.Unmarshal(t.GetSpec().GetPayload(), &pl) != nil {
		return false, false
	}
	sorted = pl.GetRequiresTimeSortedInput()
	return len(pl.GetStateSpecs()) > 0 || len(pl.GetTimerFamilySpecs()) > 0 || sorted, sorted
}

// inputs splits a transform's inputs into its main input and side inputs.
func (f *fuser) inputs(id string, t *pipepb.PTransform) (string, []SideInput, error) {
	var pl pipepb.ParDoPayload
	if t.GetSpec().GetUrn() != URNParDo && !isSDFPart(t.GetSpec().GetUrn()) {
		in, ok := onlyValue(t.GetInputs())
		if !ok {
			return "", nil, fmt.Errorf("transform %q (%s) must have exactly one input", t.GetUniqueName(), id)
		}
		return in, nil, nil
	}
	if err := proto.Unmarshal(t.GetSpec().GetPayload(), &pl); err != nil {
		return "", nil, fmt.Errorf("transform %q: malformed ParDoPayload: %v", id, err)
	}
	_, main, err := mainInput(t, &pl)
	if err != nil {
		return "", nil, fmt.Errorf("transform %q (%s): %v", t.GetUniqueName(), id, err)
	}
	var sides []SideInput
	for _, tag := range slices.Sorted(maps.Keys(pl.GetSideInputs())) {
		pc, ok := t.GetInputs()[tag]
		if !ok {
			return "", nil, fmt.Errorf("transform %q (%s): side input %q is not among its inputs", t.GetUniqueName(), id, tag)
		}
		sides = append(sides, SideInput{Transform: id, Tag: tag, PColl: pc, URN: pl.GetSideInputs()[tag].GetAccessPattern().GetUrn()})
	}
	return main, sides, nil
}

func isSDFPart(urn string) bool {
	return urn == URNPairWithRestr || urn == URNSplitAndSize || urn == URNProcessSized || urn == URNTruncate
}

// canFuse reports whether transform id may join stage s: same environment,
// no forced break, no side input produced by s or downstream of it
// (which would make the stage depend on itself), and, for a transform
// with side inputs, no WindowInto in s: the engine takes a streaming
// stage's elements as the side input windows of their windows complete,
// which must be the windows its side inputs' reader sees.
func (f *fuser) canFuse(id string, t *pipepb.PTransform, s *Stage, sides []SideInput) bool {
	if s.Kind != stagekind.SDK || s.Env != t.GetEnvironmentId() || f.g.breakBefore[id] {
		return false
	}
	if len(sides) > 0 && f.assignsWindows(s) {
		return false
	}
	for _, si := range sides {
		y := f.stageOf[f.producer[si.PColl]]
		if y == s || f.dependsOn(y, s) {
			return false
		}
	}
	return true
}

// assignsWindows reports whether a transform of s assigns windows.
func (f *fuser) assignsWindows(s *Stage) bool {
	return slices.ContainsFunc(s.Transforms, func(id string) bool {
		return f.transform(id).GetSpec().GetUrn() == URNWindowInto
	})
}

// dependsOn reports whether a transitively depends on b.
func (f *fuser) dependsOn(a, b *Stage) bool {
	seen := map[*Stage]bool{}
	var walk func(*Stage) bool
	walk = func(x *Stage) bool {
		if x == b {
			return true
		}
		if seen[x] {
			return false
		}
		seen[x] = true
		for d := range f.deps[x] {
			if walk(d) {
				return true
			}
		}
		return false
	}
	return walk(a)
}

func (f *fuser) newStage(id string, kind stagekind.Kind, env string, inputs []string) {
	s := &Stage{ID: fmt.Sprintf("s%d", len(f.stages)), Kind: kind, Env: env, Transforms: []string{id}, Inputs: inputs}
	f.stages = append(f.stages, s)
	f.stageOf[id] = s
	f.deps[s] = map[*Stage]bool{}
	for _, in := range inputs {
		f.addDep(s, f.stageOf[f.producer[in]])
	}
}

func (f *fuser) addDep(s, on *Stage) {
	if on != nil && on != s {
		f.deps[s][on] = true
	}
}

// TimerFamily is one timer family of a transform in an SDK stage.
type TimerFamily struct {
	Transform, Family string
	Coder             string // wire coder of the family's timers
	Processing        bool   // processing-time domain (else event time)
	// Expiry marks the transform's OnWindowExpiration family: the runner,
	// not the SDK, sets its timers, one per key and window with input.
	Expiry bool
}

// FlattenSink routes one flatten input into the flatten's output.
type FlattenSink struct{ From, To string }

// markOutputs materialises every PCollection read outside its stage, and
// routes flatten inputs.
func (f *fuser) markOutputs() {
	needed := map[string]bool{}
	flattens := map[string][]string{} // input pcoll -> flatten outputs, once per use
	for _, s := range f.stages {
		if s.Kind == stagekind.Flatten {
			out := sortedValues(f.transform(s.Transforms[0]).GetOutputs())[0]
			for _, in := range s.Inputs {
				f.routeFlattenInput(s, in, out, flattens)
			}
			continue
		}
		for _, in := range s.Inputs {
			needed[in] = true
		}
		for _, si := range s.SideInputs {
			needed[si.PColl] = true
		}
	}
	for _, s := range f.stages {
		for _, id := range s.Transforms {
			for _, pc := range sortedValues(f.transform(id).GetOutputs()) {
				if (needed[pc] || s.Kind != stagekind.SDK) && !slices.Contains(s.Outputs, pc) {
					s.Outputs = append(s.Outputs, pc)
				}
				if s.Kind == stagekind.SDK {
					for _, to := range flattens[pc] {
						s.FlattenSinks = append(s.FlattenSinks, FlattenSink{From: pc, To: to})
					}
				}
			}
		}
	}
}

// routeFlattenInput notes how a flatten input reaches the flatten output:
// through a sink of the SDK stage producing it, or by copying a runner
// stage's output.
func (f *fuser) routeFlattenInput(flatten *Stage, in, out string, flattens map[string][]string) {
	producer := f.stageOf[f.producer[in]]
	if producer != nil && producer.Kind == stagekind.SDK {
		flattens[in] = append(flattens[in], out)
		return
	}
	flatten.CopyInputs = append(flatten.CopyInputs, in)
}

// finish orders stages topologically and fills in dependencies.
func (f *fuser) finish() (*Plan, error) {
	original := map[string]string{}
	wire, err := wireCoders(f.g.comps, original)
	if err != nil {
		return nil, err
	}
	if err := prepareStateful(f.g.comps, f.stages); err != nil {
		return nil, err
	}
	p := &Plan{Components: f.g.comps, Consumers: map[string]int{}, Wire: wire, SDKCoder: original}
	done := map[*Stage]bool{}
	for len(p.Stages) < len(f.stages) {
		progressed := false
		for _, s := range f.stages {
			if done[s] || !allDone(f.deps[s], done) {
				continue
			}
			done[s] = true
			progressed = true
			for d := range f.deps[s] {
				s.Deps = append(s.Deps, d.ID)
			}
			sort.Strings(s.Deps)
			p.Stages = append(p.Stages, s)
		}
		if !progressed {
			return nil, fmt.Errorf("internal error: fused stages form a cycle")
		}
	}
	for _, s := range p.Stages {
		if (s.Kind == stagekind.SDK || s.Kind == stagekind.GBK) && len(s.Inputs) > 0 {
			pc := f.g.comps.GetPcollections()[s.Inputs[0]]
			s.Windowing = f.g.comps.GetWindowingStrategies()[pc.GetWindowingStrategyId()]
		}
		for _, in := range s.Inputs {
			p.Consumers[in]++
		}
		for _, si := range s.SideInputs {
			p.Consumers[si.PColl]++
		}
	}
	if err := p.addWindowMergeStages(); err != nil {
		return nil, err
	}
	p.foreignInputs()
	p.stateBackedInputs()
	p.markCombineTrees(f.g.lifted)
	return p, nil
}

func allDone(deps map[*Stage]bool, done map[*Stage]bool) bool {
	for d := range deps {
		if !done[d] {
			return false
		}
	}
	return true
}

// WireCodec compiles the coder pc's elements are exchanged and kept with.
func (p *Plan) WireCodec(pc string) (*coders.WindowedValueCodec, error) {
	return coders.CompileWindowedValue(p.Components.GetCoders(), p.Wire[pc])
}
