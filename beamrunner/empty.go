package beamrunner

import (
	"context"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal/runnerlib"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// isEmpty reports a pipeline of no transforms. It is valid Beam (the Go
// direct runner runs it), but the Go SDK's portable translation refuses
// it ("empty graph") before any runner sees it.
func isEmpty(p *beam.Pipeline) bool {
	edges, _, err := p.Build()
	return err == nil && len(edges) == 0
}

// executeEmpty runs an empty pipeline on the job server at --endpoint:
// the pipeline proto of no transforms is prepared, run and followed to its
// end through the Job API like any other. It has no environment, so there
// is nothing to stage.
func executeEmpty(ctx context.Context, _ *beam.Pipeline) (beam.PipelineResult, error) {
	cc, err := grpc.NewClient(*jobopts.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("beam-runner: connecting to job service %s: %w", *jobopts.Endpoint, err)
	}
	defer cc.Close()
	client := jobpb.NewJobServiceClient(cc)
	opt := &runnerlib.JobOptions{Name: jobopts.GetJobName(), Experiments: jobopts.GetExperiments()}
	prepID, _, token, err := runnerlib.Prepare(ctx, client, &pipepb.Pipeline{Components: &pipepb.Components{}}, opt)
	if err != nil {
		return nil, err
	}
	jobID, err := runnerlib.Submit(ctx, client, prepID, token)
	if err != nil {
		return nil, err
	}
	if err := runnerlib.WaitForCompletion(ctx, client, jobID); err != nil {
		return nil, err
	}
	return emptyResult(jobID), nil
}

// emptyResult is the result of an empty pipeline: a job without metrics.
type emptyResult string

func (r emptyResult) JobID() string            { return string(r) }
func (r emptyResult) Metrics() metrics.Results { return metrics.Results{} }
