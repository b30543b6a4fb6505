package execute

import (
	"fmt"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/runner/engine"
	"github.com/beam-runner/beam-runner/runner/plan"
	"google.golang.org/protobuf/proto"
)

// testStreamEvents decodes a TestStream's payload into engine events with
// elements encoded as windowed values of each output's wire coder.
func (r *run) testStreamEvents(s *plan.Stage) ([]engine.Event, error) {
	t := r.plan.Components.GetTransforms()[s.Transforms[0]]
	var pl pipepb.TestStreamPayload
	if err := proto.Unmarshal(t.GetSpec().GetPayload(), &pl); err != nil {
		return nil, fmt.Errorf("malformed TestStreamPayload: %v", err)
	}
	wrap, err := r.needsLengthPrefix(pl.GetCoderId())
	if err != nil {
		return nil, err
	}
	var events []engine.Event
	for i, ev := range pl.GetEvents() {
		e, err := r.testStreamEvent(t, ev, wrap)
		if err != nil {
			return nil, fmt.Errorf("TestStream event %d: %w", i, err)
		}
		events = append(events, e)
	}
	return events, nil
}

// needsLengthPrefix reports whether elements encoded with the payload's
// coder must get a length prefix to match the wire coder, which wraps
// coders the runner does not know.
func (r *run) needsLengthPrefix(coderID string) (bool, error) {
	c := r.plan.Components.GetCoders()[coderID]
	if c == nil {
		return false, fmt.Errorf("TestStream coder %q is not defined", coderID)
	}
	if !coders.Known(c.GetSpec().GetUrn()) {
		return true, nil
	}
	lp, err := coders.LPUnknown(r.plan.Components.Coders, coderID)
	if err != nil {
		return false, err
	}
	if lp != coderID {
		return false, fmt.Errorf("TestStream coder %q nests a coder the runner does not know; not supported", coderID)
	}
	return false, nil
}

func (r *run) testStreamEvent(t *pipepb.PTransform, ev *pipepb.TestStreamPayload_Event, wrap bool) (engine.Event, error) {
	switch {
	case ev.GetElementEvent() != nil:
		pc, err := outputByTag(t, ev.GetElementEvent().GetTag())
		if err != nil {
			return engine.Event{}, err
		}
		var buf []byte
		for _, el := range ev.GetElementEvent().GetElements() {
			elem := el.GetEncodedElement()
			if wrap {
				elem = coders.AppendLengthPrefixed(nil, elem)
			}
			buf = coders.AppendWindowedValue(buf, el.GetTimestamp(), 1, nil, coders.NoFiringPane, elem)
		}
		return engine.Event{Kind: engine.AddElements, PColl: pc, Elements: buf}, nil
	case ev.GetWatermarkEvent() != nil:
		pc, err := outputByTag(t, ev.GetWatermarkEvent().GetTag())
		if err != nil {
			return engine.Event{}, err
		}
		return engine.Event{Kind: engine.AdvanceWatermark, PColl: pc, Watermark: ev.GetWatermarkEvent().GetNewWatermark()}, nil
	case ev.GetProcessingTimeEvent() != nil:
		return engine.Event{Kind: engine.AdvanceProcessingTime, Advance: ev.GetProcessingTimeEvent().GetAdvanceDuration()}, nil
	}
	return engine.Event{}, fmt.Errorf("empty event")
}

// outputByTag finds the output PCollection for an event's tag; an empty tag
// means the only output.
func outputByTag(t *pipepb.PTransform, tag string) (string, error) {
	if pc, ok := t.GetOutputs()[tag]; ok {
		return pc, nil
	}
	if tag == "" && len(t.GetOutputs()) == 1 {
		for _, pc := range t.GetOutputs() {
			return pc, nil
		}
	}
	return "", fmt.Errorf("no output with tag %q", tag)
}
