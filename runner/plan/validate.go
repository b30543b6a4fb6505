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
			if err := checkGBKWindowing(g, id, t, opts); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkGBKWindowing(g *graph, id string, t *pipepb.PTransform, opts Options) error {
	in, _ := onlyValue(t.GetInputs())
	pc := g.comps.GetPcollections()[in]
	if pc == nil {
		return fmt.Errorf("GroupByKey %q (%s) reads PCollection %q, which is not defined", t.GetUniqueName(), id, in)
	}
	ws := g.comps.GetWindowingStrategies()[pc.GetWindowingStrategyId()]
	if ws == nil {
		return fmt.Errorf("PCollection %q has no windowing strategy %q", in, pc.GetWindowingStrategyId())
	}
	// Windows were assigned by the SDK, so any window fn groups: the
	// runner reads only window ends (custom windows get a coder that
	// carries theirs, see wireWindowCoders). Merging ones other than
	// sessions are merged by the SDK that defined them.
	if SDKMergesWindows(ws) {
		env := g.comps.GetEnvironments()[ws.GetEnvironmentId()]
		if env == nil {
			return fmt.Errorf("GroupByKey %q (%s): window fn %q merges windows, which only the SDK that defined it can do, but its windowing strategy %q names no environment of the pipeline (%q)", t.GetUniqueName(), id, ws.GetWindowFn().GetUrn(), pc.GetWindowingStrategyId(), ws.GetEnvironmentId())
		}
		if opts.Startable != nil && !opts.Startable(env.GetUrn()) {
			return fmt.Errorf("GroupByKey %q (%s): window fn %q merges windows in environment %q, whose URN %q beam-runner cannot start", t.GetUniqueName(), id, ws.GetWindowFn().GetUrn(), ws.GetEnvironmentId(), env.GetUrn())
		}
	}
	if opts.Grouping == nil {
		return nil
	}
	kind := coders.CustomWindows
	if wc := g.comps.GetCoders()[ws.GetWindowCoderId()]; wc != nil && coders.WindowKindOf(wc.GetSpec().GetUrn()) != coders.OtherWindow {
		kind = coders.WindowKindOf(wc.GetSpec().GetUrn())
	}
	grouping := opts.Grouping
	if err := grouping(ws, kind); err != nil {
		return fmt.Errorf("GroupByKey %q (%s): %v", t.GetUniqueName(), id, err)
	}
	return nil
}
