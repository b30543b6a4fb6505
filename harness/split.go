package harness

import (
	"context"
	"fmt"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
)

// SplitResult is what the SDK gave up of a running bundle: residual
// applications (the unprocessed parts of split elements) and the index of
// the first input element it will not process (-1 when none).
type SplitResult struct {
	// Primaries are what the bundle keeps of the elements it split.
	Primaries     []*fnpb.BundleApplication
	Residuals     []*fnpb.DelayedBundleApplication
	FirstResidual int64
}

// Split asks a running bundle to keep only about fraction of its remaining
// work. fraction 0 asks it to stop as soon as it can (a checkpoint).
func (h *Harness) Split(ctx context.Context, inst, source string, fraction float64, estimatedElements int64) (SplitResult, error) {
	w := h.worker()
	resp, err := w.Do(ctx, &fnpb.InstructionRequest{
		InstructionId: h.instID("split"),
		Request: &fnpb.InstructionRequest_ProcessBundleSplit{ProcessBundleSplit: &fnpb.ProcessBundleSplitRequest{
			InstructionId: inst,
			DesiredSplits: map[string]*fnpb.ProcessBundleSplitRequest_DesiredSplit{
				source: {FractionOfRemainder: fraction, EstimatedInputElements: estimatedElements},
			},
		}},
	})
	if err != nil {
		return SplitResult{}, fmt.Errorf("splitting bundle %s on worker %q: %w", inst, w.ID, err)
	}
	if resp.GetError() != "" {
		return SplitResult{}, fmt.Errorf("splitting bundle %s on worker %q: %s", inst, w.ID, resp.GetError())
	}
	sr := resp.GetProcessBundleSplit()
	out := SplitResult{Primaries: sr.GetPrimaryRoots(), Residuals: sr.GetResidualRoots(), FirstResidual: -1}
	out.FirstResidual = channelSplit(sr.GetChannelSplits(), source)
	return out, nil
}

// channelSplit is the first residual element of the source's channel
// split, -1 if there is none. Only the source was asked to split, so a
// channel split that names no transform is the source's: Java's harness
// (through 2.77 at least) leaves transform_id unset in the channel splits
// it reports.
func channelSplit(css []*fnpb.ProcessBundleSplitResponse_ChannelSplit, source string) int64 {
	first := int64(-1)
	for _, cs := range css {
		switch cs.GetTransformId() {
		case source:
			return cs.GetFirstResidualElement()
		case "":
			first = cs.GetFirstResidualElement()
		}
	}
	return first
}

// Progress asks a running bundle for its metrics so far.
func (h *Harness) Progress(ctx context.Context, inst string) ([]*pipepb.MonitoringInfo, error) {
	w := h.worker()
	resp, err := w.Do(ctx, &fnpb.InstructionRequest{
		InstructionId: h.instID("progress"),
		Request: &fnpb.InstructionRequest_ProcessBundleProgress{ProcessBundleProgress: &fnpb.ProcessBundleProgressRequest{
			InstructionId: inst,
		}},
	})
	if err != nil {
		return nil, fmt.Errorf("progress of bundle %s on worker %q: %w", inst, w.ID, err)
	}
	if resp.GetError() != "" {
		return nil, fmt.Errorf("progress of bundle %s on worker %q: %s", inst, w.ID, resp.GetError())
	}
	return resp.GetProcessBundleProgress().GetMonitoringInfos(), nil
}
