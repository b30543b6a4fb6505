package spec

import (
	"fmt"
	"slices"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/runner/engine"
	"github.com/beam-runner/beam-runner/runner/plan"
	"google.golang.org/protobuf/proto"
)

// testStreamEvents decodes a TestStream's payload into engine events with
// elements encoded as windowed values of each output's wire coder.
func (b builder) testStreamEvents(s *plan.Stage) ([]engine.Event, error) {
	t := b.pl.Components.GetTransforms()[s.Transforms[0]]
	var pl pipepb.TestStreamPayload
	if err := proto.Unmarshal(t.GetSpec().GetPayload(), &pl); err != nil {
		return nil, fmt.Errorf("malformed TestStreamPayload: %v", err)
	}
	var events []engine.Event
	for i, ev := range pl.GetEvents() {
		e, err := b.testStreamEvent(t, pl.GetCoderId(), ev)
		if err != nil {
			return nil, fmt.Errorf("TestStream event %d: %w", i, err)
		}
		events = append(events, e)
	}
	return events, nil
}

// needsLengthPrefix reports whether elements encoded with the output's SDK
// coder must get a length prefix to match its wire coder. SDKs encode
// TestStream elements with the output PCollection's coder (the Go SDK names
// a different coder in the payload, but encodes with the PCollection's).
func (b builder) needsLengthPrefix(pc string) (bool, error) {
	orig := b.pl.SDKCoder[pc]
	wire := b.pl.Components.GetPcollections()[pc].GetCoderId()
	if orig == wire {
		return false, nil
	}
	if c := b.pl.Components.GetCoders()[wire]; c.GetSpec().GetUrn() == coders.URNLengthPrefix && c.GetComponentCoderIds()[0] == orig {
		return true, nil
	}
	return false, fmt.Errorf("TestStream output %q has coder %q, which nests a coder the runner does not know; not supported", pc, orig)
}

// elementNester returns how a TestStream's encoded elements become the
// nested elements of output pc's wire coder. Java and Python encode them in
// the outer context of the payload's coder, which the plan made pc's; the
// Go SDK encodes them nested with pc's coder (see plan.GoTestStream).
// payloadCoder is the coder the payload names.
func (b builder) elementNester(t *pipepb.PTransform, payloadCoder, pc string) (func([]byte) ([]byte, error), error) {
	if plan.GoTestStream(b.pl.Components, t) {
		wrap, err := b.needsLengthPrefix(pc)
		if err != nil {
			return nil, err
		}
		return func(e []byte) ([]byte, error) {
			if wrap {
				return coders.AppendLengthPrefixed(nil, e), nil
			}
			return e, nil
		}, nil
	}
	comps := b.pl.Components.GetCoders()
	sdk, wire := b.pl.SDKCoder[pc], b.pl.Components.GetPcollections()[pc].GetCoderId()
	if c := comps[sdk]; c.GetSpec().GetUrn() == coders.URNLengthPrefix && slices.Equal(c.GetComponentCoderIds(), []string{payloadCoder}) {
		// The plan wraps elements it cannot split whole (plan.transcodeTestStream).
		sdk = payloadCoder
	}
	return func(e []byte) ([]byte, error) { return coders.NestedFromOuter(comps, sdk, wire, e) }, nil
}

func (b builder) testStreamEvent(t *pipepb.PTransform, payloadCoder string, ev *pipepb.TestStreamPayload_Event) (engine.Event, error) {
	switch {
	case ev.GetElementEvent() != nil:
		pc, err := outputByTag(t, ev.GetElementEvent().GetTag())
		if err != nil {
			return engine.Event{}, err
		}
		nest, err := b.elementNester(t, payloadCoder, pc)
		if err != nil {
			return engine.Event{}, err
		}
		var buf []byte
		for i, el := range ev.GetElementEvent().GetElements() {
			elem, err := nest(el.GetEncodedElement())
			if err != nil {
				return engine.Event{}, fmt.Errorf("element %d: %w", i, err)
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
