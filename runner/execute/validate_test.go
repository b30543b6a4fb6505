package execute

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/beam-runner/beam-runner/runner/jobs"
	"github.com/beam-runner/beam-runner/testsupport/gopipe"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
)

// Validate rejects a GroupByKey whose windowing the engine cannot group,
// naming the GroupByKey and what is unsupported, before the job starts.
func TestValidateRejectsUngroupableWindowing(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	beam.GroupByKey(s, beam.ParDo(s, keyByLen, beam.Create(s, "a", "bb")))
	pb := gopipe.ForTest(t, p)
	if err := New(Options{}).Validate(pb); err != nil {
		t.Fatalf("the pipeline as built: %v", err)
	}
	for _, ws := range pb.GetComponents().GetWindowingStrategies() {
		ws.AccumulationMode = pipepb.AccumulationMode_RETRACTING
	}
	err := New(Options{}).Validate(pb)
	if err == nil || !strings.Contains(err.Error(), "GroupByKey") || !strings.Contains(err.Error(), "accumulation mode") {
		t.Fatalf("Validate = %v, want the GroupByKey's unsupported accumulation mode", err)
	}
}

// A pipeline of no transforms (Java's PipelineTest#testEmptyPipeline, an
// empty Python pipeline) is valid Beam: it validates and runs to its end
// with no stage and no worker.
func TestEmptyPipelineRuns(t *testing.T) {
	for name, pb := range map[string]*pipepb.Pipeline{
		"no components":    {},
		"empty components": {Components: &pipepb.Components{}},
	} {
		e := New(Options{})
		if err := e.Validate(pb); err != nil {
			t.Errorf("%s: Validate = %v, want it accepted", name, err)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := e.Execute(ctx, &jobs.Job{ID: "empty", Name: name, Pipeline: pb})
		cancel()
		if err != nil {
			t.Errorf("%s: Execute = %v, want the job done", name, err)
		}
	}
}
