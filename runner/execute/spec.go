package execute

import (
	"fmt"
	"sort"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/runner/engine"
	"github.com/beam-runner/beam-runner/runner/engine/agg"
	"github.com/beam-runner/beam-runner/runner/plan"
	"github.com/beam-runner/beam-runner/runner/stagekind"
)

// minBundleBytes keeps small inputs in one bundle: splitting them costs
// more in round trips than it gains.
const minBundleBytes = 1 << 20

// buildSpec translates the plan into the engine's terms.
func (r *run) buildSpec(startTime int64) (engine.Spec, error) {
	spec := engine.Spec{
		PColls:         map[string]engine.PCollSpec{},
		MaxBundles:     r.opts.Parallelism,
		MaxAttempts:    r.opts.MaxBundleAttempts,
		MinBundleBytes: minBundleBytes,
		StartTime:      startTime,
	}
	spec.PendingSpill, spec.PendingBudget = r.pendingSpill()
	for _, s := range r.plan.Stages {
		ss, err := r.stageSpec(s)
		if err != nil {
			return spec, fmt.Errorf("stage %s (%s): %w", s.ID, r.stageName(s), err)
		}
		spec.Stages = append(spec.Stages, ss)
		if s.Kind == stagekind.TestStream {
			spec.Streaming = true
		}
		for _, pc := range stagePColls(s) {
			keyed := (s.Kind == stagekind.GBK || s.Stateful) && len(s.Inputs) > 0 && pc == s.Inputs[0]
			if err := r.addPColl(&spec, pc, keyed); err != nil {
				return spec, err
			}
			if r.plan.Components.GetPcollections()[pc].GetIsBounded() == pipepb.IsBounded_UNBOUNDED {
				spec.Streaming = true
			}
		}
	}
	return spec, nil
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

func (r *run) addPColl(spec *engine.Spec, pc string, keyed bool) error {
	ps, ok := spec.PColls[pc]
	if !ok {
		wv, err := r.codec(pc)
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

func (r *run) stageSpec(s *plan.Stage) (engine.StageSpec, error) {
	ss := engine.StageSpec{ID: s.ID, Kind: s.Kind, Inputs: s.Inputs, Outputs: s.Outputs, CopyInputs: s.CopyInputs}
	switch s.Kind {
	case stagekind.SDK:
		ss.SideInputs = uniqueSides(s)
		ss.Keyed = s.Stateful
		if s.Stateful {
			pc := r.plan.Components.GetPcollections()[s.Inputs[0]]
			ss.AllowedLateness = r.plan.Components.GetWindowingStrategies()[pc.GetWindowingStrategyId()].GetAllowedLateness()
		}
		ss.Splittable = s.Truncate != ""
		// Bundles in one interpreter run in parallel only if that pays.
		ss.ProbeBundles = sharedInterpreter(r.plan.Components.GetEnvironments()[s.Env], r.job.Options)
		timers, err := r.timerSpecs(s)
		if err != nil {
			return ss, err
		}
		ss.Timers = timers
		// Inputs of flattens written through flatten sinks get their
		// watermark from this stage too.
		ss.Outputs = append([]string{}, s.Outputs...)
		for _, fs := range s.FlattenSinks {
			if !contains(ss.Outputs, fs.From) {
				ss.Outputs = append(ss.Outputs, fs.From)
			}
		}
	case stagekind.GBK:
		cfg, err := r.aggConfig(s.Inputs[0])
		if err != nil {
			return ss, err
		}
		cfg.Spill, cfg.SpillBudget = r.gbkSpill(s.ID)
		if cfg.Spill != nil {
			cfg.Hot, cfg.HotPrefix, cfg.HotBytes = r.gbkHot(s, cfg.SpillBudget)
		}
		ss.Agg = cfg
	case stagekind.TestStream:
		events, err := r.testStreamEvents(s)
		if err != nil {
			return ss, err
		}
		ss.Events = events
	}
	return ss, nil
}

func uniqueSides(s *plan.Stage) []string {
	set := map[string]bool{}
	for _, si := range s.SideInputs {
		set[si.PColl] = true
	}
	var out []string
	for pc := range set {
		out = append(out, pc)
	}
	sort.Strings(out)
	return out
}

func (r *run) aggConfig(in string) (agg.Config, error) {
	wv, err := r.codec(in)
	if err != nil {
		return agg.Config{}, err
	}
	pc := r.plan.Components.GetPcollections()[in]
	ws := r.plan.Components.GetWindowingStrategies()[pc.GetWindowingStrategyId()]
	kind := wv.WindowKind()
	if kind == coders.OtherWindow {
		return agg.Config{}, fmt.Errorf("window coder of %q is not supported for grouping", in)
	}
	return agg.ConfigFromStrategy(ws, kind), nil
}

func (r *run) codec(pc string) (*coders.WindowedValueCodec, error) {
	return coders.CompileWindowedValue(r.plan.Components.GetCoders(), r.plan.Wire[pc])
}

func (r *run) stageName(s *plan.Stage) string {
	t := r.plan.Components.GetTransforms()[s.Transforms[0]]
	if len(s.Transforms) == 1 {
		return t.GetUniqueName()
	}
	return fmt.Sprintf("%s and %d more", t.GetUniqueName(), len(s.Transforms)-1)
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func (r *run) timerSpecs(s *plan.Stage) ([]engine.TimerSpec, error) {
	var out []engine.TimerSpec
	for _, tf := range s.Timers {
		c, err := coders.CompileTimer(r.plan.Components.GetCoders(), tf.Coder)
		if err != nil {
			return nil, fmt.Errorf("timer family %q of %q: %w", tf.Family, tf.Transform, err)
		}
		out = append(out, engine.TimerSpec{
			Stream: engine.TimerStream{Transform: tf.Transform, Family: tf.Family}, Codec: c, Processing: tf.Processing,
		})
	}
	return out, nil
}
