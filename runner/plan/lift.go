package plan

import (
	"fmt"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"
)

// Coder URNs the planner builds.
const (
	coderKV       = "beam:coder:kv:v1"
	coderIterable = "beam:coder:iterable:v1"
	coderDouble   = "beam:coder:double:v1"
)

// liftable reports whether a combine_per_key composite may be replaced by
// precombine → GBK → merge → extract: the payload must parse, the
// input's windows must not merge (accumulators are merged per window) and
// its trigger must be the default.
//
// Nor is an unbounded input with an earliest-in-pane output time lifted:
// the pane's timestamp leaves out elements behind the watermark (Java's
// WatermarkHold), but an accumulator carries only the earliest timestamp
// of what it combined, which may be behind while the others are not
// (Beam's trigger_transcripts.yaml, known_late_data_watermark). Bounded
// input is never behind: a batch GroupByKey's watermark stays at the
// start of time until its input is complete.
func (g *graph) liftable(t *pipepb.PTransform) bool {
	var pl pipepb.CombinePayload
	if proto.Unmarshal(t.GetSpec().GetPayload(), &pl) != nil || pl.GetAccumulatorCoderId() == "" {
		return false
	}
	in, ok := onlyValue(t.GetInputs())
	if !ok {
		return false
	}
	if _, ok := onlyValue(t.GetOutputs()); !ok {
		return false
	}
	pc := g.comps.GetPcollections()[in]
	ws := g.comps.GetWindowingStrategies()[pc.GetWindowingStrategyId()]
	if ws == nil || ws.GetMergeStatus() == pipepb.MergeStatus_NEEDS_MERGE || !isDefaultTrigger(ws.GetTrigger()) {
		return false
	}
	if ws.GetOutputTime() == pipepb.OutputTime_EARLIEST_IN_PANE && pc.GetIsBounded() != pipepb.IsBounded_BOUNDED {
		return false
	}
	kv := g.comps.GetCoders()[pc.GetCoderId()]
	return kv.GetSpec().GetUrn() == coderKV && len(kv.GetComponentCoderIds()) == 2
}

func isDefaultTrigger(t *pipepb.Trigger) bool {
	return t == nil || t.GetDefault() != nil
}

// liftCombine replaces a combine_per_key composite with its lifted phases
// and returns their ids in order.
func (g *graph) liftCombine(id string, t *pipepb.PTransform) ([]string, error) {
	var pl pipepb.CombinePayload
	if err := proto.Unmarshal(t.GetSpec().GetPayload(), &pl); err != nil {
		return nil, fmt.Errorf("transform %q: malformed CombinePayload: %v", id, err)
	}
	in, _ := onlyValue(t.GetInputs())
	out, _ := onlyValue(t.GetOutputs())
	inPC := g.comps.GetPcollections()[in]
	keyCoder := g.comps.GetCoders()[inPC.GetCoderId()].GetComponentCoderIds()[0]
	accum := pl.GetAccumulatorCoderId()

	kvAccum := g.addCoder(id+"/kv_accum", coderKV, keyCoder, accum)
	iterAccum := g.addCoder(id+"/iter_accum", coderIterable, accum)
	kvIter := g.addCoder(id+"/kv_iter_accum", coderKV, keyCoder, iterAccum)

	pre := g.addPColl(id+"/precombined", kvAccum, inPC)
	grouped := g.addPColl(id+"/grouped", kvIter, inPC)
	merged := g.addPColl(id+"/merged", kvAccum, inPC)

	env := g.envOf(t)
	payload := t.GetSpec().GetPayload()
	ids := []string{
		g.addTransform(id+"/Precombine", t.GetUniqueName()+"/Precombine", URNPreCombine, payload, env, in, pre),
		g.addTransform(id+"/Group", t.GetUniqueName()+"/Group", URNGBK, nil, "", pre, grouped),
		g.addTransform(id+"/Merge", t.GetUniqueName()+"/Merge", URNMergeAccum, payload, env, grouped, merged),
		g.addTransform(id+"/Extract", t.GetUniqueName()+"/Extract", URNExtractOutputs, payload, env, merged, out),
	}
	g.lifted[ids[1]] = ids[2]
	return ids, nil
}

// envOf finds the environment of a composite: its own, or its first
// subtransform's that has one.
func (g *graph) envOf(t *pipepb.PTransform) string {
	if t.GetEnvironmentId() != "" {
		return t.GetEnvironmentId()
	}
	for _, sub := range t.GetSubtransforms() {
		if e := g.envOf(g.comps.GetTransforms()[sub]); e != "" {
			return e
		}
	}
	return ""
}

func (g *graph) uniqueID(base string, exists func(string) bool) string {
	id := base
	for i := 1; exists(id); i++ {
		id = fmt.Sprintf("%s_%d", base, i)
	}
	return id
}

func (g *graph) addCoder(base, urn string, comps ...string) string {
	id := g.uniqueID(base, func(s string) bool { _, ok := g.comps.Coders[s]; return ok })
	g.comps.Coders[id] = &pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: urn}, ComponentCoderIds: comps}
	return id
}

// addPColl adds a PCollection with like's windowing and boundedness.
func (g *graph) addPColl(base, coder string, like *pipepb.PCollection) string {
	id := g.uniqueID(base, func(s string) bool { _, ok := g.comps.Pcollections[s]; return ok })
	g.comps.Pcollections[id] = &pipepb.PCollection{
		UniqueName: id, CoderId: coder,
		IsBounded: like.GetIsBounded(), WindowingStrategyId: like.GetWindowingStrategyId(),
	}
	return id
}

func (g *graph) addTransform(base, name, urn string, payload []byte, env, in, out string) string {
	id := g.uniqueID(base, func(s string) bool { _, ok := g.comps.Transforms[s]; return ok })
	g.comps.Transforms[id] = &pipepb.PTransform{
		UniqueName:    name,
		Spec:          &pipepb.FunctionSpec{Urn: urn, Payload: payload},
		Inputs:        map[string]string{"in": in},
		Outputs:       map[string]string{"out": out},
		EnvironmentId: env,
	}
	return id
}
