package plan

import (
	"fmt"
	"maps"
	"slices"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/runner/stagekind"
	"google.golang.org/protobuf/proto"
)

// prepareStateful gives the timer families and ordered-list state of every
// SDK stage's ParDos coders the runner can parse (unknown coders wrapped in
// length prefixes, as for PCollections), and records the stage's timer
// families. The SDK encodes timer keys with the same key coder as the
// input's, so timers route to the keys their elements did.
func prepareStateful(comps *pipepb.Components, stages []*Stage) error {
	for _, s := range stages {
		if s.Kind != stagekind.SDK {
			continue
		}
		for _, id := range s.Transforms {
			t := comps.GetTransforms()[id]
			if t.GetSpec().GetUrn() != URNParDo && t.GetSpec().GetUrn() != URNProcessSized {
				continue
			}
			fams, err := rewriteParDoCoders(comps, id, t)
			if err != nil {
				return err
			}
			s.Timers = append(s.Timers, fams...)
		}
	}
	return nil
}

func rewriteParDoCoders(comps *pipepb.Components, id string, t *pipepb.PTransform) ([]TimerFamily, error) {
	var pl pipepb.ParDoPayload
	if err := proto.Unmarshal(t.GetSpec().GetPayload(), &pl); err != nil {
		return nil, fmt.Errorf("transform %q: malformed ParDoPayload: %v", id, err)
	}
	if len(pl.GetTimerFamilySpecs()) == 0 && len(pl.GetStateSpecs()) == 0 {
		return nil, nil
	}
	var fams []TimerFamily
	for _, fam := range slices.Sorted(maps.Keys(pl.GetTimerFamilySpecs())) {
		spec := pl.GetTimerFamilySpecs()[fam]
		c, err := coders.LPUnknown(comps.Coders, spec.GetTimerFamilyCoderId())
		if err != nil {
			return nil, fmt.Errorf("transform %q timer family %q: %v", id, fam, err)
		}
		spec.TimerFamilyCoderId = c
		fams = append(fams, TimerFamily{
			Transform: id, Family: fam, Coder: c,
			Processing: spec.GetTimeDomain() == pipepb.TimeDomain_PROCESSING_TIME,
			Expiry:     fam == pl.GetOnWindowExpirationTimerFamilySpec(),
		})
	}
	for _, sid := range slices.Sorted(maps.Keys(pl.GetStateSpecs())) {
		ol := pl.GetStateSpecs()[sid].GetOrderedListSpec()
		if ol == nil {
			continue
		}
		c, err := coders.LPUnknown(comps.Coders, ol.GetElementCoderId())
		if err != nil {
			return nil, fmt.Errorf("transform %q state %q: %v", id, sid, err)
		}
		ol.ElementCoderId = c
	}
	payload, err := proto.Marshal(&pl)
	if err != nil {
		return nil, fmt.Errorf("transform %q: %v", id, err)
	}
	t.Spec.Payload = payload
	return fams, nil
}

// OrderedListCoder returns the element coder of a transform's ordered-list
// state, as the runner must parse appended entries.
func (p *Plan) OrderedListCoder(transform, stateID string) (string, error) {
	t := p.Components.GetTransforms()[transform]
	var pl pipepb.ParDoPayload
	if err := proto.Unmarshal(t.GetSpec().GetPayload(), &pl); err != nil {
		return "", fmt.Errorf("transform %q: malformed ParDoPayload: %v", transform, err)
	}
	ol := pl.GetStateSpecs()[stateID].GetOrderedListSpec()
	if ol == nil {
		return "", fmt.Errorf("transform %q has no ordered-list state %q", transform, stateID)
	}
	return ol.GetElementCoderId(), nil
}
