package execute

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
)

// Validate rejects a GroupByKey whose windowing the engine cannot group,
// naming the GroupByKey and what is unsupported, before the job starts.
func TestValidateRejectsUngroupableWindowing(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	beam.GroupByKey(s, beam.ParDo(s, keyByLen, beam.Create(s, "a", "bb")))
	pb := marshalForTest(t, p)
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

// marshalForTest turns p into its proto, in an EXTERNAL environment that
// nothing starts.
func marshalForTest(t *testing.T, p *beam.Pipeline) *pipepb.Pipeline {
	t.Helper()
	edges, _, err := p.Build()
	if err != nil {
		t.Fatal(err)
	}
	env, err := graphx.CreateEnvironment(context.Background(), "beam:env:external:v1", func(context.Context) string { return "localhost:1" })
	if err != nil {
		t.Fatal(err)
	}
	pb, err := graphx.Marshal(edges, &graphx.Options{Environment: env})
	if err != nil {
		t.Fatal(err)
	}
	return pb
}
