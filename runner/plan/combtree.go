package plan

import (
	"fmt"

	"github.com/beam-runner/beam-runner/runner/stagekind"
)

// A lifted combine's GroupByKey can merge its accumulators as they arrive
// (a combiner tree, see the engine's agg/tree.go): the runner sends a
// partial group through the combine's Merge transform, run alone, and
// takes the merged accumulator back into the GroupByKey. That is exact
// only if the Merge writes accumulators in the bytes the GroupByKey reads
// them in, so the GroupByKey's input and the Merge's output must share a
// wire coder, as lifting makes them (both KV<key, accumulator> in the
// input's windowing).

// markCombineTrees sets TreeTransform on the GroupByKeys of lifted combines whose
// Merge starts an SDK stage and writes the GroupByKey's wire coding.
func (p *Plan) markCombineTrees(lifted map[string]string) {
	for _, s := range p.Stages {
		if s.Kind != stagekind.GBK {
			continue
		}
		merge, ok := lifted[s.Transforms[0]]
		if !ok || p.treeHome(merge) == nil {
			continue
		}
		if out, ok := onlyValue(p.Components.GetTransforms()[merge].GetOutputs()); ok && p.Wire[out] == p.Wire[s.Inputs[0]] {
			s.TreeTransform = merge
		}
	}
}

// treeHome is the SDK stage a Merge transform starts.
func (p *Plan) treeHome(merge string) *Stage {
	for _, s := range p.Stages {
		if s.Kind == stagekind.SDK && s.Transforms[0] == merge {
			return s
		}
	}
	return nil
}

// TreeStage is the SDK stage that runs a lifted combine's Merge alone on
// partial groups of its GroupByKey gbk: it reads what the GroupByKey
// emits, as the stage holding the Merge does (with that stage's coders
// for SDKs that do not know the GroupByKey's), and writes what the
// GroupByKey reads. Its id is the GroupByKey's with "/combine-tree"
// (never persisted: a snapshot names only the plan's own stages).
func (p *Plan) TreeStage(gbk *Stage) (*Stage, error) {
	home := p.treeHome(gbk.TreeTransform)
	if gbk.Kind != stagekind.GBK || gbk.TreeTransform == "" || home == nil {
		return nil, fmt.Errorf("stage %s is not the GroupByKey of a lifted combine", gbk.ID)
	}
	out, _ := onlyValue(p.Components.GetTransforms()[gbk.TreeTransform].GetOutputs())
	grouped := gbk.Outputs[0]
	s := &Stage{
		ID: gbk.ID + "/combine-tree", Kind: stagekind.SDK, Env: home.Env,
		Transforms: []string{gbk.TreeTransform}, Inputs: []string{grouped}, Outputs: []string{out},
		Windowing: home.Windowing,
	}
	if ic, ok := home.InputCoders[grouped]; ok {
		s.InputCoders = map[string]InputCoder{grouped: ic}
	}
	return s, nil
}
