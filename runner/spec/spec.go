// Package spec translates a job's plan into the engine's terms: its
// stages, PCollections and their coders, TestStream events, and the
// bounds on parallelism and memory the engine keeps to. It reads only the
// plan and its configuration and starts nothing.
package spec

import (
	"fmt"
	"github.com/beam-runner/beam-runner/runner/jobs"
	"github.com/beam-runner/beam-runner/worker"
	"maps"
	"slices"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/runner/engine"
	"github.com/beam-runner/beam-runner/runner/engine/agg"
	"github.com/beam-runner/beam-runner/runner/plan"
	"github.com/beam-runner/beam-runner/runner/stagekind"
	"github.com/beam-runner/beam-runner/worker/sdkenv"
	"google.golang.org/protobuf/types/known/structpb"
)

// minBundleBytes keeps small inputs in one bundle: splitting them costs
// more in round trips than it gains.
const minBundleBytes = 1 << 20

// Config is what translating a plan into the engine's terms takes
// besides the plan: the executor's bounds, the job's options and its
// spill space.
type Config struct {
	Parallelism, MaxAttempts int
	StartTime                int64            // processing time, in ms
	Options                  *structpb.Struct // the job's pipeline options
	// Space opens the job's spill space under a name; nil without a store.
	Space        func(name string) agg.Spill
	MemoryLimit  int64 // 0: none
	BoundPending bool  // see Memory.BoundPending
	// EnvBundles caps the bundles at once of stages of environments on
	// worker pools (one per worker), raising Parallelism to the largest.
	EnvBundles map[string]int
	// ScaledMax is, per environment autoscaling sizes, the most workers
	// it may grow to: its stages may run that many bundles at once (never
	// fewer than unscaled), so that the workers it adds get bundles.
	ScaledMax map[string]int
	// EnvWorkers is, per environment, how many workers run its bundles:
	// a stateful stage's keys keep to one of them each (StageSpec.Lanes).
	EnvWorkers map[string]int
	// CombineTreeBytes is how many bytes of fresh accumulators a lifted
	// combine's GroupByKey takes in before its combiner tree has the SDK
	// combine them; 0 means the engine's default, negative no tree.
	CombineTreeBytes int
	// FlowControl is the engine's flow control for streaming jobs; nil:
	// off.
	FlowControl *engine.FlowControl
}

// Build translates a plan into the engine's terms. It reads only its
// arguments and starts nothing, so tests can call it on a plan alone.
func Build(pl *plan.Plan, cfg Config) (engine.Spec, error) {
	return builder{pl: pl, cfg: cfg}.spec()
}

// builder holds what Build's steps share.
type builder struct {
	pl  *plan.Plan
	cfg Config
}

func (b builder) spec() (engine.Spec, error) {
	spec := engine.Spec{
		PColls:         map[string]engine.PCollSpec{},
		MaxBundles:     b.cfg.Parallelism,
		MaxAttempts:    b.cfg.MaxAttempts,
		MinBundleBytes: minBundleBytes,
		StartTime:      b.cfg.StartTime,
		Flow:           b.cfg.FlowControl,
	}
	for _, n := range b.cfg.EnvBundles {
		spec.MaxBundles = max(spec.MaxBundles, n)
	}
	for _, n := range b.cfg.ScaledMax {
		spec.MaxBundles = max(spec.MaxBundles, n)
	}
	spec.PendingSpill, spec.PendingBudget = b.pendingSpill()
	bundle, err := jobs.StreamBundleTime(b.cfg.Options)
	if err != nil {
		return spec, err
	}
	spec.StreamBundleMs = bundle.Milliseconds()
	for _, s := range b.pl.Stages {
		ss, err := b.stageSpec(s)
		if err != nil {
			return spec, fmt.Errorf("stage %s (%s): %w", s.ID, StageName(b.pl, s), err)
		}
		spec.Stages = append(spec.Stages, ss)
		if s.Kind == stagekind.TestStream {
			spec.Streaming = true
		}
		for _, pc := range stagePColls(s) {
			keyed := (s.Kind == stagekind.GBK || s.Stateful) && len(s.Inputs) > 0 && pc == s.Inputs[0]
			if err := b.addPColl(&spec, pc, keyed); err != nil {
				return spec, err
			}
			if b.pl.Components.GetPcollections()[pc].GetIsBounded() == pipepb.IsBounded_UNBOUNDED {
				spec.Streaming = true
			}
		}
	}
	return spec, nil
}

// pythonProcesses is, for an environment whose Python workers are
// processes of their own, how many there are: a bundle each runs at full
// speed, and more only contend for their interpreter locks (the bench's
// py-wordcount-process, two worker processes, median of 3: 4 bundles at
// once 28.5 s and 119 MiB server peak RSS, 2 at once 27.8 s and 68 MiB).
// 0 for other environments.
func pythonProcesses(env *pipepb.Environment, opts *structpb.Struct) int {
	if sdkenv.SDKOf(env) != sdkenv.Python || jobs.SharedInterpreter(env, opts) {
		return 0
	}
	n, err := jobs.PerEnv(opts, env)
	if err != nil {
		return 0 // the job fails starting its workers, saying why
	}
	return n
}

// processCap is how many bundles at once a stage of environment envID
// runs on its Python worker processes (0: no cap of its own): one per
// process, under autoscaling one per process it may grow to.
func (b builder) processCap(envID string) int {
	n := pythonProcesses(b.pl.Components.GetEnvironments()[envID], b.cfg.Options)
	if hi := b.cfg.ScaledMax[envID]; n > 0 && hi > n {
		n = hi
	}
	return n
}

func stagePColls(s *plan.Stage) []string {
	out := append([]string{}, s.Inputs...)
	out = append(out, s.Outputs...)
	for _, si := range s.SideInputs {
		out = append(out, si.PColl)
	}
	for _, fs := range s.FlattenSinks {
		out = append(out, fs.To)
	}
	return out
}

func (b builder) addPColl(spec *engine.Spec, pc string, keyed bool) error {
	ps, ok := spec.PColls[pc]
	if !ok {
		wv, err := b.pl.WireCodec(pc)
		if err != nil {
			return fmt.Errorf("PCollection %q: %w", pc, err)
		}
		ps = engine.PCollSpec{Codec: wv}
	}
	if keyed && ps.Key == nil {
		if ps.Key = ps.Codec.Elem.Component(0); ps.Key == nil {
			return fmt.Errorf("GroupByKey input %q is not KV-coded (%s)", pc, ps.Codec.Elem.URN())
		}
	}
	spec.PColls[pc] = ps
	return nil
}

func (b builder) stageSpec(s *plan.Stage) (engine.StageSpec, error) {
	ss := engine.StageSpec{ID: s.ID, Kind: s.Kind, Inputs: s.Inputs, Outputs: s.Outputs, CopyInputs: s.CopyInputs}
	switch s.Kind {
	case stagekind.SDK:
		ss.SideInputs = uniqueSides(s)
		sw, err := b.sideWindows(ss.SideInputs)
		if err != nil {
			return ss, err
		}
		ss.SideWindows = sw
		ss.Keyed, ss.TimeSorted = s.Stateful, s.TimeSorted
		if s.Stateful {
			ss.AllowedLateness = s.Windowing.GetAllowedLateness()
			ss.Lanes = b.cfg.EnvWorkers[s.Env]
		}
		ss.Splittable = s.Truncate != ""
		env := b.pl.Components.GetEnvironments()[s.Env]
		ss.TimedCheckpoints = ss.Splittable && sdkenv.CheckpointsExactly(env)
		// Bundles in one interpreter run in parallel only if that pays.
		ss.ProbeBundles = jobs.SharedInterpreter(env, b.cfg.Options)
		ss.MaxBundles = b.processCap(s.Env)
		if n, ok := b.cfg.EnvBundles[s.Env]; ok {
			ss.MaxBundles = n
		}
		timers, err := b.timerSpecs(s)
		if err != nil {
			return ss, err
		}
		ss.Timers = timers
		// Inputs of flattens written through flatten sinks get their
		// watermark from this stage too.
		ss.Outputs = append([]string{}, s.Outputs...)
		for _, fs := range s.FlattenSinks {
			if !slices.Contains(ss.Outputs, fs.From) {
				ss.Outputs = append(ss.Outputs, fs.From)
			}
		}
	case stagekind.GBK:
		cfg, err := b.aggConfig(s)
		if err != nil {
			return ss, err
		}
		cfg.Spill, cfg.SpillBudget = b.gbkSpill(s.ID)
		if cfg.Spill != nil {
			cfg.Hot, cfg.HotPrefix, cfg.HotBytes = b.gbkHot(s, cfg.SpillBudget)
		}
		ss.Agg = cfg
		ss.WindowMergeStage = s.WindowMergeStage
		if err := b.combineTree(s, &ss); err != nil {
			return ss, err
		}
	case stagekind.TestStream:
		events, err := b.testStreamEvents(s)
		if err != nil {
			return ss, err
		}
		ss.Events = events
	}
	return ss, nil
}

// combineTree gives the GroupByKey of a lifted combine its combiner tree
// and tree stage, unless the options turned trees off.
func (b builder) combineTree(s *plan.Stage, ss *engine.StageSpec) error {
	if s.TreeTransform == "" || b.cfg.CombineTreeBytes < 0 {
		return nil
	}
	ts, err := b.pl.TreeStage(s)
	if err != nil {
		return err
	}
	ss.Agg.Combine = &agg.CombineTree{PassBytes: b.cfg.CombineTreeBytes}
	ss.TreeStage = ts.ID
	// As the SDK stage it stands for: combines would only contend for one
	// interpreter, or for more than its Python processes.
	env := b.pl.Components.GetEnvironments()[ts.Env]
	ss.TreeMaxBundles = b.processCap(ts.Env)
	if jobs.SharedInterpreter(env, b.cfg.Options) {
		ss.TreeMaxBundles = 1
	}
	return nil
}

func uniqueSides(s *plan.Stage) []string {
	set := map[string]bool{}
	for _, si := range s.SideInputs {
		set[si.PColl] = true
	}
	return slices.Sorted(maps.Keys(set))
}

// aggConfig configures a GBK stage from its input's windowing, reading
// its windows as the input's wire coder encodes them.
func (b builder) aggConfig(s *plan.Stage) (agg.Config, error) {
	in := s.Inputs[0]
	wv, err := b.pl.WireCodec(in)
	if err != nil {
		return agg.Config{}, err
	}
	kind := wv.WindowKind()
	if kind == coders.OtherWindow {
		return agg.Config{}, fmt.Errorf("window coder of %q is not supported for grouping", in)
	}
	return agg.ConfigFromStrategy(s.Windowing, kind), nil
}

// stageName names a stage by its first transform, for logs and errors.
func StageName(pl *plan.Plan, s *plan.Stage) string {
	t := pl.Components.GetTransforms()[s.Transforms[0]]
	if len(s.Transforms) == 1 {
		return t.GetUniqueName()
	}
	return fmt.Sprintf("%s and %d more", t.GetUniqueName(), len(s.Transforms)-1)
}

func (b builder) timerSpecs(s *plan.Stage) ([]engine.TimerSpec, error) {
	var out []engine.TimerSpec
	for _, tf := range s.Timers {
		c, err := coders.CompileTimer(b.pl.Components.GetCoders(), tf.Coder)
		if err != nil {
			return nil, fmt.Errorf("timer family %q of %q: %w", tf.Family, tf.Transform, err)
		}
		out = append(out, engine.TimerSpec{
			Stream: engine.TimerStream{Transform: tf.Transform, Family: tf.Family}, Codec: c, Processing: tf.Processing, Expiry: tf.Expiry,
		})
	}
	return out, nil
}

// Plan builds a job's plan, with the runner's own checks: every
// environment is one the runner can start, and every GroupByKey's
// windowing one it can group by.
func Plan(p *pipepb.Pipeline) (*plan.Plan, error) { return PlanStarting(p, nil) }

// PlanStarting is Plan with transforms (by id) that must each start a
// stage (plan.Options.StartStage).
func PlanStarting(p *pipepb.Pipeline, startStage []string) (*plan.Plan, error) {
	return plan.BuildWith(p, plan.Options{Startable: worker.Supported, Grouping: agg.CheckStrategy, StartStage: startStage})
}

// HasTestStream reports whether the plan has a TestStream, under which
// processing time moves only with the stream's events.
func HasTestStream(pl *plan.Plan) bool {
	for _, s := range pl.Stages {
		if s.Kind == stagekind.TestStream {
			return true
		}
	}
	return false
}

// SDKStage is a stage whose bundles an SDK runs.
type SDKStage struct {
	Stage *plan.Stage
	// TreeOf is, for the tree stage of a lifted combine's combiner
	// tree, its GroupByKey's stage id, under which its bundles are
	// reported; "" for the plan's own SDK stages.
	TreeOf string
}

// SDKStages lists the stages SDKs run: the plan's SDK stages, and the
// tree stages of lifted combines' combiner trees unless
// combineTreeBytes turns trees off (see Config.CombineTreeBytes).
func SDKStages(pl *plan.Plan, combineTreeBytes int) ([]SDKStage, error) {
	var out []SDKStage
	for _, s := range pl.Stages {
		if s.Kind == stagekind.GBK && s.TreeTransform != "" && combineTreeBytes >= 0 {
			ts, err := pl.TreeStage(s)
			if err != nil {
				return nil, err
			}
			out = append(out, SDKStage{Stage: ts, TreeOf: s.ID})
		}
		if s.Kind == stagekind.SDK {
			out = append(out, SDKStage{Stage: s})
		}
	}
	return out, nil
}
