package plan

import (
	"fmt"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/coders"
)

func checkRequirements(p *pipepb.Pipeline) error {
	for _, r := range p.GetRequirements() {
		if !supportedRequirements[r] {
			return fmt.Errorf("pipeline requires %q, which beam-runner does not support yet", r)
		}
	}
	return nil
}

// knownWindowFns are the window fns whose windows the runner can group.
var knownWindowFns = map[string]bool{
	URNGlobalWindows: true, URNFixedWindows: true, URNSlidingWindows: true, URNSessions: true,
}

func checkEnvironmentsAndWindows(g *graph, opts Options) error {
	for _, id := range g.leaves {
		t := g.comps.GetTransforms()[id]
		if sdkLeaves[t.GetSpec().GetUrn()] {
			env := g.comps.GetEnvironments()[t.GetEnvironmentId()]
			if env == nil {
				return fmt.Errorf("transform %q (%s) names environment %q, which the pipeline does not define", t.GetUniqueName(), id, t.GetEnvironmentId())
			}
			if opts.Startable != nil && !opts.Startable(env.GetUrn()) {
				return fmt.Errorf("transform %q (%s): environment %q has URN %q, which beam-runner cannot start", t.GetUniqueName(), id, t.GetEnvironmentId(), env.GetUrn())
			}
		}
		if t.GetSpec().GetUrn() == URNGBK {
			if err := checkGBKWindowing(g, id, t, opts.Grouping); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkGBKWindowing(g *graph, id string, t *pipepb.PTransform, grouping func(*pipepb.WindowingStrategy, coders.WindowKind) error) error {
	in, _ := onlyValue(t.GetInputs())
	pc := g.comps.GetPcollections()[in]
	if pc == nil {
		return fmt.Errorf("GroupByKey %q (%s) reads PCollection %q, which is not defined", t.GetUniqueName(), id, in)
	}
	ws := g.comps.GetWindowingStrategies()[pc.GetWindowingStrategyId()]
	if ws == nil {
		return fmt.Errorf("PCollection %q has no windowing strategy %q", in, pc.GetWindowingStrategyId())
	}
	if u := ws.GetWindowFn().GetUrn(); !knownWindowFns[u] {
		return fmt.Errorf("GroupByKey %q (%s): window fn %q is not supported by beam-runner", t.GetUniqueName(), id, u)
	}
	if grouping == nil {
		return nil
	}
	kind := coders.IntervalWindows
	if ws.GetWindowFn().GetUrn() == URNGlobalWindows {
		kind = coders.GlobalWindow
	}
	if err := grouping(ws, kind); err != nil {
		return fmt.Errorf("GroupByKey %q (%s): %v", t.GetUniqueName(), id, err)
	}
	return nil
}
