package execute

import (
	"context"
	"strings"
	"testing"

	"github.com/beam-runner/beam-runner/runner/jobs"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
)

// A bad value of one of the runner's own job options is refused at
// Prepare, naming the option, instead of failing the job when it starts;
// good values prepare.
func TestPrepareChecksRunnerOptions(t *testing.T) {
	svc := jobs.NewService(jobs.Options{Executor: New(Options{})})
	defer svc.Close(context.Background())
	for _, c := range []struct {
		opts map[string]any
		want string // "" when it must prepare
	}{
		{opts: map[string]any{"beam:option:streaming_bundle_time:v1": "250ms", "autoscaling": "ds2", "max_workers": 4}},
		{opts: map[string]any{"streaming_bundle_time": "1ms"}, want: "streaming_bundle_time: want a duration from 10ms to 1m"},
		{opts: map[string]any{"autoscaling": "hpa"}, want: "autoscaling: want none or ds2"},
		{opts: map[string]any{"min_workers": 5, "max_workers": 2}, want: "max_workers 2 is below min_workers 5"},
		{opts: map[string]any{"scale_down_window": "-1s"}, want: "scale_down_window"},
		{opts: map[string]any{"workers_per_environment": 0}, want: "workers_per_environment: want a whole number from 1 to 256"},
		{opts: map[string]any{"worker_pools": 7}, want: "worker_pools: want a string"},
	} {
		opts, err := structpb.NewStruct(c.opts)
		if err != nil {
			t.Fatal(err)
		}
		_, err = svc.Prepare(context.Background(), &jobpb.PrepareJobRequest{Pipeline: &pipepb.Pipeline{}, PipelineOptions: opts})
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%v: Prepare = %v, want it prepared", c.opts, err)
		case c.want != "" && (status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%v: Prepare = %v, want InvalidArgument with %q", c.opts, err, c.want)
		}
	}
}
