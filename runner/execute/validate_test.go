package execute

import (
	"github.com/beam-runner/beam-runner/testsupport/gopipe"
	"strings"
	"testing"

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
