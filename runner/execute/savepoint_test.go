package execute

import (
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/beam-runner/beam-runner/runner/plan"
	"github.com/beam-runner/beam-runner/runner/spec"
	"github.com/beam-runner/beam-runner/testsupport/counting"
	"github.com/beam-runner/beam-runner/testsupport/gopipe"
)

func countingPlan(t *testing.T, start time.Time, extra bool) *plan.Plan {
	t.Helper()
	p, s := beam.NewPipelineWithRoot()
	counting.Pipeline(start, start.Add(time.Minute), 20*time.Millisecond, false)(s)
	if extra {
		beam.ParDo(s.Scope("extra"), strings.ToUpper, beam.Create(s, "a", "b"))
	}
	pl, err := spec.Plan(gopipe.ForTest(t, p))
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

// A savepoint's checkpoint restores into the same fused plan: a
// stateless step whose code or payload changed keeps it; a step added
// changes it, and the refusal says where and why.
func TestShapeDiffOfRealPlans(t *testing.T) {
	t0 := time.UnixMilli(1_700_000_000_000)
	old := planShape(countingPlan(t, t0, false))
	if len(old) == 0 {
		t.Fatal("empty shape")
	}
	if err := shapeDiff(old, planShape(countingPlan(t, t0.Add(time.Hour), false))); err != nil {
		t.Errorf("a moved impulse (a stateless payload) changed the shape: %v", err)
	}
	err := shapeDiff(old, planShape(countingPlan(t, t0, true)))
	if err == nil || !strings.Contains(err.Error(), "restores a savepoint only into a pipeline that fuses into the same stages") {
		t.Errorf("an added step: %v, want the shape refused", err)
	}
	if err := shapeDiff([]string{"a", "b"}, []string{"a"}); err == nil || !strings.Contains(err.Error(), `the savepoint's pipeline has "b", which the new one has not`) {
		t.Errorf("a shorter shape: %v", err)
	}
	if err := shapeDiff([]string{"a"}, []string{"a", "c"}); err == nil || !strings.Contains(err.Error(), `the new pipeline has "c", which the savepoint's has not`) {
		t.Errorf("a longer shape: %v", err)
	}
}
