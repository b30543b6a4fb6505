package execute

import (
	"fmt"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"
)

// The Go SDK sets none of the ParDo flags of Java's annotations
// (@OnWindowExpiration, @RequiresTimeSortedInput, @RequiresStableInput):
// tests set them in the pipeline proto, as Java's translation would.

// editParDos applies edit to the payload of every ParDo of p, and adds
// req to p's requirements when edit changed any (reported true).
func editParDos(p *pipepb.Pipeline, req string, edit func(*pipepb.ParDoPayload) bool) error {
	edited := false
	for id, t := range p.GetComponents().GetTransforms() {
		if t.GetSpec().GetUrn() != "beam:transform:pardo:v1" {
			continue
		}
		changed := false
		err := editParDo(t, func(pl *pipepb.ParDoPayload) bool {
			changed = edit(pl)
			return changed
		})
		if err != nil {
			return fmt.Errorf("transform %s: %w", id, err)
		}
		edited = edited || changed
	}
	if edited {
		p.Requirements = append(p.Requirements, req)
	}
	return nil
}

// editParDo rewrites t's ParDo payload when edit reports a change.
func editParDo(t *pipepb.PTransform, edit func(*pipepb.ParDoPayload) bool) error {
	var pl pipepb.ParDoPayload
	if err := proto.Unmarshal(t.GetSpec().GetPayload(), &pl); err != nil {
		return err
	}
	if !edit(&pl) {
		return nil
	}
	b, err := proto.Marshal(&pl)
	if err != nil {
		return err
	}
	t.Spec.Payload = b
	return nil
}
