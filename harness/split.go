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
	first, err := firstResidual(sr.GetChannelSplits(), source)
	if err != nil {
		return SplitResult{}, &SplitLost{Instruction: inst, Worker: w.ID, Err: err}
	}
	return SplitResult{Primaries: sr.GetPrimaryRoots(), Residuals: sr.GetResidualRoots(), FirstResidual: first}, nil
}

// firstResidual is the first input element of source that a split gave
// up, or -1. Java's harness (2.73) leaves a channel split's transform_id
// empty: a bundle reads one data input, so a lone unnamed channel split is
// that input's (ignoring it lost every element past it: the SDK stops
// there, and the runner never ran them). A channel split naming another
// transform is an error rather than silently nothing given up.
func firstResidual(splits []*fnpb.ProcessBundleSplitResponse_ChannelSplit, source string) (int64, error) {
	first := int64(-1)
	for _, cs := range splits {
		switch id := cs.GetTransformId(); {
		case id == source, id == "" && len(splits) == 1:
			first = cs.GetFirstResidualElement()
		default:
			return -1, fmt.Errorf("the SDK split input %q, but the bundle reads %q", id, source)
		}
	}
	return first, nil
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

// SplitLost is a split the SDK made that the runner cannot account for:
// the SDK stops at its split point, so the bundle's remaining input would
// be lost. Unlike a refused split, it must fail the job.
type SplitLost struct {
	Instruction, Worker string
	Err                 error
}

func (e *SplitLost) Error() string {
	return fmt.Sprintf("splitting bundle %s on worker %q: %v", e.Instruction, e.Worker, e.Err)
}

func (e *SplitLost) Unwrap() error { return e.Err }
