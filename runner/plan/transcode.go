package plan

import (
	"bytes"
	"fmt"
	"maps"
	"slices"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/worker/sdkenv"
	"google.golang.org/protobuf/proto"
)

// transcodeFlattenInputs lets a flatten read, from a runner stage, an input
// whose coder differs from the flatten output's (Python flattens
// PCollections of any coders). The runner never decodes SDK coders, so an
// SDK-executed one-input flatten re-encodes that input with the output's
// coder; SDK-produced inputs are already written with it by flatten sinks.
func (g *graph) transcodeFlattenInputs() {
	producer := map[string]string{}
	for _, id := range g.leaves {
		for _, pc := range g.comps.GetTransforms()[id].GetOutputs() {
			producer[pc] = id
		}
	}
	var leaves []string
	for _, id := range g.leaves {
		t := g.comps.GetTransforms()[id]
		if u := t.GetSpec().GetUrn(); (u == URNTestStream || u == URNTestStreamGo) && !GoTestStream(g.comps, t) {
			leaves = append(leaves, id)
			leaves = append(leaves, g.transcodeTestStream(id, t)...)
			continue
		}
		if t.GetSpec().GetUrn() == URNFlatten && !g.sdkFlattens[id] {
			out, _ := onlyValue(t.GetOutputs())
			for _, tag := range slices.Sorted(maps.Keys(t.GetInputs())) {
				in := t.GetInputs()[tag]
				p := g.comps.GetTransforms()[producer[in]]
				if !runnerLeaves[p.GetSpec().GetUrn()] || g.sameCoder(in, out) || g.sdkEnvironment(t) == "" {
					continue // no SDK to re-encode with: copied as before
				}
				tid := g.addTranscode(id, tag, in, out)
				leaves = append(leaves, tid)
			}
		}
		leaves = append(leaves, id)
	}
	g.leaves = leaves
}

// addTranscode adds the SDK flatten that copies input tag of flatten id
// into a new PCollection with the flatten output's coder, and makes the
// flatten read that instead.
func (g *graph) addTranscode(id, tag, in, out string) string {
	t := g.comps.GetTransforms()[id]
	pc := proto.Clone(g.comps.GetPcollections()[in]).(*pipepb.PCollection)
	pc.CoderId = g.comps.GetPcollections()[out].GetCoderId()
	pcID := g.unusedID(fmt.Sprintf("%s/transcoded/%s", in, id), func(s string) bool { return g.comps.GetPcollections()[s] != nil })
	pc.UniqueName = pcID
	g.comps.Pcollections[pcID] = pc
	tid := g.unusedID(fmt.Sprintf("%s/transcode/%s", id, tag), func(s string) bool { return g.comps.GetTransforms()[s] != nil })
	g.comps.Transforms[tid] = &pipepb.PTransform{
		UniqueName:    t.GetUniqueName() + "/transcode/" + tag,
		Spec:          &pipepb.FunctionSpec{Urn: URNFlatten},
		Inputs:        map[string]string{"in": in},
		Outputs:       map[string]string{"out": pcID},
		EnvironmentId: g.sdkEnvironment(t),
	}
	t.Inputs[tag] = pcID
	g.sdkFlattens[tid] = true
	return tid
}

func (g *graph) unusedID(base string, taken func(string) bool) string {
	id := base
	for i := 1; taken(id); i++ {
		id = fmt.Sprintf("%s%d", base, i)
	}
	return id
}

// sdkEnvironment picks the environment that runs a transcoding flatten:
// the flatten's own if it names one, else the first SDK transform's.
func (g *graph) sdkEnvironment(t *pipepb.PTransform) string {
	if t.GetEnvironmentId() != "" {
		return t.GetEnvironmentId()
	}
	for _, id := range g.leaves {
		if l := g.comps.GetTransforms()[id]; sdkLeaves[l.GetSpec().GetUrn()] && l.GetEnvironmentId() != "" {
			return l.GetEnvironmentId()
		}
	}
	return ""
}

// sameCoder reports whether two PCollections' coders encode alike: the same
// coder, or coders with equal specs and equal components.
func (g *graph) sameCoder(a, b string) bool {
	return g.coderEqual(g.comps.GetPcollections()[a].GetCoderId(), g.comps.GetPcollections()[b].GetCoderId(), 0)
}

func (g *graph) coderEqual(a, b string, depth int) bool {
	if a == b {
		return true
	}
	ca, cb := g.comps.GetCoders()[a], g.comps.GetCoders()[b]
	if ca == nil || cb == nil || depth > 50 || ca.GetSpec().GetUrn() != cb.GetSpec().GetUrn() ||
		!bytes.Equal(ca.GetSpec().GetPayload(), cb.GetSpec().GetPayload()) ||
		len(ca.GetComponentCoderIds()) != len(cb.GetComponentCoderIds()) {
		return false
	}
	for i, c := range ca.GetComponentCoderIds() {
		if !g.coderEqual(c, cb.GetComponentCoderIds()[i], depth+1) {
			return false
		}
	}
	return true
}

// GoTestStream reports a TestStream written by the Go SDK, which encodes
// its elements nested, with the output PCollection's coder, whatever coder
// its payload names. Java and Python encode them as the TestStreamPayload
// defines: in the outer context of the payload's coder. The Go SDK is
// recognised by its environment's sdk_base capability.
func GoTestStream(comps *pipepb.Components, t *pipepb.PTransform) bool {
	return sdkenv.SDKOf(comps.GetEnvironments()[t.GetEnvironmentId()]) == sdkenv.Go
}

// transcodeTestStream makes a TestStream whose payload coder differs from
// an output's coder (Python's TestStream(coder=...) keeps the output's
// inferred coder) write that output with the payload's coder, which the
// runner can frame, and re-encode it in the SDK with the output's coder.
// Where the runner cannot split the payload's elements (a KV whose key
// coder it does not know, as Java's KV<Void, ...>), every output is
// written with a length prefix around the payload's coder, whose inner
// value is exactly such an element, and the SDK re-encodes it with the
// output's wire coder, which wraps the key. It returns the transcoding
// flattens added.
func (g *graph) transcodeTestStream(id string, t *pipepb.PTransform) []string {
	var pl pipepb.TestStreamPayload
	if proto.Unmarshal(t.GetSpec().GetPayload(), &pl) != nil || g.comps.GetCoders()[pl.GetCoderId()] == nil ||
		g.sdkEnvironment(t) == "" {
		return nil // reported when the events are decoded
	}
	written := pl.GetCoderId()
	whole := !coders.OuterSplittable(g.comps.GetCoders(), written)
	if whole {
		written = g.lengthPrefixed(written)
	}
	var added []string
	for _, tag := range slices.Sorted(maps.Keys(t.GetOutputs())) {
		out := t.GetOutputs()[tag]
		if !whole && g.coderEqual(written, g.comps.GetPcollections()[out].GetCoderId(), 0) {
			continue
		}
		pc := proto.Clone(g.comps.GetPcollections()[out]).(*pipepb.PCollection)
		pc.CoderId = written
		pcID := g.unusedID(fmt.Sprintf("%s/payload_coded", out), func(s string) bool { return g.comps.GetPcollections()[s] != nil })
		pc.UniqueName = pcID
		g.comps.Pcollections[pcID] = pc
		t.Outputs[tag] = pcID
		tid := g.unusedID(fmt.Sprintf("%s/transcode/%s", id, tag), func(s string) bool { return g.comps.GetTransforms()[s] != nil })
		g.comps.Transforms[tid] = &pipepb.PTransform{
			UniqueName:    t.GetUniqueName() + "/transcode/" + tag,
			Spec:          &pipepb.FunctionSpec{Urn: URNFlatten},
			Inputs:        map[string]string{"in": pcID},
			Outputs:       map[string]string{"out": out},
			EnvironmentId: g.sdkEnvironment(t),
		}
		g.sdkFlattens[tid] = true
		added = append(added, tid)
	}
	return added
}

// lengthPrefixed adds (once) and names beam:coder:length_prefix:v1 around
// coder id.
func (g *graph) lengthPrefixed(id string) string {
	lp := &pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: coders.URNLengthPrefix}, ComponentCoderIds: []string{id}}
	if existing, ok := g.comps.GetCoders()[id+"_whole"]; ok && proto.Equal(existing, lp) {
		return id + "_whole"
	}
	lid := g.unusedID(id+"_whole", func(s string) bool { return g.comps.GetCoders()[s] != nil })
	g.comps.Coders[lid] = lp
	return lid
}
