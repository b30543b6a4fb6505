package execute

import (
	"slices"

	"github.com/beam-runner/beam-runner/runner/autoscale"
	"github.com/beam-runner/beam-runner/runner/plan"
	"github.com/beam-runner/beam-runner/runner/stagekind"
)

// scaleGraph is the DS2 stage graph of a plan: its SDK stages (the ones
// workers run and rates are measured for), each with the SDK stages
// upstream of it, looking through runner stages (GroupByKeys, flattens),
// which run no worker's code. A stage with none upstream (it reads an
// impulse) is a source, and so is one that starts with a splittable
// DoFn's processing: its input is restrictions, and DS2 sizes it, as
// autoscale does sources, by what it emits. Combiner-tree stages are
// left out: their bundles count under their GroupByKey, no SDK stage.
func scaleGraph(pl *plan.Plan, sdk map[string]*sdkStage) []autoscale.StageInput {
	producer := map[string][]*plan.Stage{}
	for _, s := range pl.Stages {
		for _, pc := range s.Outputs {
			producer[pc] = append(producer[pc], s)
		}
		for _, fs := range s.FlattenSinks { // written straight into the flatten's output
			producer[fs.From] = append(producer[fs.From], s)
			producer[fs.To] = append(producer[fs.To], s)
		}
	}
	var out []autoscale.StageInput
	for _, s := range pl.Stages {
		if s.Kind != stagekind.SDK || sdk[s.ID] == nil || sdk[s.ID].treeOf != "" {
			continue
		}
		in := autoscale.StageInput{ID: s.ID, Env: s.Env}
		if len(s.Inputs) > 0 && !splittableRead(pl, s) {
			for _, from := range sdkUpstream(producer, s.Inputs[0], map[string]bool{}) {
				in.Inputs = append(in.Inputs, autoscale.Edge{From: from})
			}
		}
		out = append(out, in)
	}
	return out
}

// sdkUpstream is the SDK stages whose output reaches PCollection pc,
// through runner stages; seen guards against revisiting a stage.
func sdkUpstream(producer map[string][]*plan.Stage, pc string, seen map[string]bool) []string {
	var out []string
	add := func(id string) {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	for _, s := range producer[pc] {
		if seen[s.ID] {
			continue
		}
		seen[s.ID] = true
		if s.Kind == stagekind.SDK {
			add(s.ID)
			continue
		}
		for _, in := range append(slices.Clone(s.Inputs), s.CopyInputs...) {
			for _, id := range sdkUpstream(producer, in, seen) {
				add(id)
			}
		}
	}
	return out
}

// splittableRead reports whether stage s starts by processing a
// splittable DoFn's restrictions.
func splittableRead(pl *plan.Plan, s *plan.Stage) bool {
	if len(s.Transforms) == 0 {
		return false
	}
	return pl.Components.GetTransforms()[s.Transforms[0]].GetSpec().GetUrn() == plan.URNProcessSized
}
