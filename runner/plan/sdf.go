package plan

import (
	"fmt"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"
)

// expandSDF replaces a splittable ParDo with pair-with-restriction →
// split-and-size → process-sized, materialising the sized restrictions so
// the runner can spread them over bundles.
func (g *graph) expandSDF(id string, t *pipepb.PTransform) ([]string, bool, error) {
	var pl pipepb.ParDoPayload
	if err := proto.Unmarshal(t.GetSpec().GetPayload(), &pl); err != nil {
		return nil, false, fmt.Errorf("transform %q: malformed ParDoPayload: %v", id, err)
	}
	if pl.GetRestrictionCoderId() == "" {
		return nil, false, nil
	}
	tag, main, err := mainInput(t, &pl)
	if err != nil {
		return nil, false, fmt.Errorf("transform %q: %v", id, err)
	}
	mainPC := g.comps.GetPcollections()[main]
	paired := g.addCoder(id+"/paired", coderKV, mainPC.GetCoderId(), pl.GetRestrictionCoderId())
	double := g.addCoder(id+"/double", coderDouble)
	sized := g.addCoder(id+"/sized", coderKV, paired, double)
	pairedPC := g.addPColl(main+"/paired", paired, mainPC)
	sizedPC := g.addPColl(main+"/sized", sized, mainPC)

	pairID := g.copyTransform(id, "/PairWithRestriction", URNPairWithRestr, tag, main, map[string]string{"out": pairedPC})
	splitID := g.copyTransform(id, "/SplitAndSizeRestrictions", URNSplitAndSize, tag, pairedPC, map[string]string{"out": sizedPC})
	// Truncation runs only while draining: not a leaf, but a descriptor of
	// its own that sized restrictions pass through before processing.
	truncPC := g.addPColl(main+"/truncated", sized, mainPC)
	g.truncates[id] = truncateInfo{
		transform: g.copyTransform(id, "/TruncateRestriction", URNTruncate, tag, sizedPC, map[string]string{"out": truncPC}),
		out:       truncPC,
	}
	// The processing step keeps the original id, so metrics and logs name
	// the user's transform.
	proc := g.comps.GetTransforms()[id]
	proc.Spec.Urn = URNProcessSized
	proc.Inputs[tag] = sizedPC
	g.breakBefore[id] = true
	return []string{pairID, splitID, id}, true, nil
}

// copyTransform copies transform id under a new URN, with its main input
// replaced and the given outputs.
func (g *graph) copyTransform(id, suffix, urn, mainTag, mainIn string, outputs map[string]string) string {
	t := proto.Clone(g.comps.GetTransforms()[id]).(*pipepb.PTransform)
	t.UniqueName += suffix
	t.Spec.Urn = urn
	t.Inputs[mainTag] = mainIn
	t.Outputs = map[string]string{}
	for k, v := range outputs {
		t.Outputs[k] = v
	}
	nid := g.uniqueID(id+suffix, func(s string) bool { _, ok := g.comps.Transforms[s]; return ok })
	g.comps.Transforms[nid] = t
	return nid
}

// mainInput returns the tag and PCollection of a ParDo's main input.
func mainInput(t *pipepb.PTransform, pl *pipepb.ParDoPayload) (string, string, error) {
	var tag, pc string
	for k, v := range t.GetInputs() {
		if _, side := pl.GetSideInputs()[k]; side {
			continue
		}
		if tag != "" {
			return "", "", fmt.Errorf("ParDo has more than one main input (%q and %q)", tag, k)
		}
		tag, pc = k, v
	}
	if tag == "" {
		return "", "", fmt.Errorf("ParDo has no main input")
	}
	return tag, pc, nil
}
