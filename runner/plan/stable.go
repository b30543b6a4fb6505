package plan

import (
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/stagekind"
	"google.golang.org/protobuf/proto"
)

// A DoFn with @RequiresStableInput (beam:requirement:pardo:stable_input:v1)
// must see the same input on every attempt and after every restore: sinks
// that write exactly once rely on it. The runner gives that by materialising
// its input: the DoFn starts a stage of its own, whose input is a
// PCollection committed atomically with the bundle that produced it (and
// checkpointed with the engine's pending input in streaming). Fused behind a
// nondeterministic transform, a retried bundle would recompute that input
// and hand the DoFn different elements.

// markStableInputs breaks fusion before every leaf whose ParDo requires
// stable input. A splittable one breaks before its PairWithRestriction,
// which reads the element; its processing step breaks anyway (sdf.go).
func (g *graph) markStableInputs() {
	for _, id := range g.leaves {
		if requiresStableInput(g.comps.GetTransforms()[id]) {
			g.breakBefore[id] = true
		}
	}
}

// requiresStableInput reports whether t is a ParDo, or the first step of an
// expanded splittable one, whose payload sets requires_stable_input. A
// malformed payload reports false: checkParDo has refused it already.
func requiresStableInput(t *pipepb.PTransform) bool {
	if urn := t.GetSpec().GetUrn(); urn != URNParDo && urn != URNPairWithRestr {
		return false
	}
	var pl pipepb.ParDoPayload
	if proto.Unmarshal(t.GetSpec().GetPayload(), &pl) != nil {
		return false
	}
	return pl.GetRequiresStableInput()
}

// StableInput reports whether stage s starts with a DoFn that requires
// stable input, so its input is materialised and must be checkpointed
// before it reads it.
func (p *Plan) StableInput(s *Stage) bool {
	return s.Kind == stagekind.SDK && len(s.Transforms) > 0 &&
		requiresStableInput(p.Components.GetTransforms()[s.Transforms[0]])
}
