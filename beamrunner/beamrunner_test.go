package beamrunner

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
)

// TestInProcessSubmission drives the Go SDK's whole portable path against
// an in-process server: Prepare, staging, Run and WaitForCompletion. Until
// the engine lands the stub executor fails the job, and that failure text
// must reach the caller.
func TestInProcessSubmission(t *testing.T) {
	beam.Init()
	p, s := beam.NewPipelineWithRoot()
	beam.Create(s, 1, 2, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := Execute(ctx, p)
	if err == nil {
		return // the engine ran the pipeline: the stub has been replaced
	}
	if !strings.Contains(err.Error(), "not yet wired") {
		t.Fatalf("Execute = %v, want the executor's error", err)
	}
	if *jobopts.Endpoint != "" || *jobopts.EnvironmentType != "" {
		t.Errorf("flags not restored: endpoint %q, environment %q", *jobopts.Endpoint, *jobopts.EnvironmentType)
	}
}

// TestEmptyPipelineEndsDone: a Go pipeline with no transforms is valid
// Beam; submitted with --runner=beam-runner it runs and ends DONE, as on
// the Go direct runner, instead of being refused at Prepare.
func TestEmptyPipelineEndsDone(t *testing.T) {
	beam.Init()
	p := beam.NewPipeline()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := Execute(ctx, p)
	if err != nil {
		t.Fatalf("Execute(empty pipeline) = %v, want DONE", err)
	}
	if res == nil || res.JobID() == "" {
		t.Fatalf("Execute(empty pipeline) gave no job: %v", res)
	}
}
