package execute

import (
	"reflect"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/rtrackers/offsetrange"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"
)

func init() {
	beam.RegisterType(reflect.TypeOf((*checkpointEvery3)(nil)).Elem())
}

// checkpointEvery3 emits the positions of [0, 100), checkpointing after
// every three claims, so the runner must reschedule 33 residuals.
type checkpointEvery3 struct{}

func (fn *checkpointEvery3) CreateInitialRestriction(_ []byte) offsetrange.Restriction {
	return offsetrange.Restriction{Start: 0, End: 100}
}

func (fn *checkpointEvery3) SplitRestriction(_ []byte, r offsetrange.Restriction) []offsetrange.Restriction {
	return []offsetrange.Restriction{r}
}

func (fn *checkpointEvery3) RestrictionSize(_ []byte, r offsetrange.Restriction) float64 {
	return r.Size()
}

func (fn *checkpointEvery3) CreateTracker(r offsetrange.Restriction) *sdf.LockRTracker {
	return sdf.NewLockRTracker(offsetrange.NewTracker(r))
}

func (fn *checkpointEvery3) ProcessElement(rt *sdf.LockRTracker, _ []byte, emit func(int)) sdf.ProcessContinuation {
	pos := rt.GetRestriction().(offsetrange.Restriction).Start
	for claimed := 0; claimed < 3; claimed++ {
		if !rt.TryClaim(pos) {
			return sdf.StopProcessing()
		}
		emit(int(pos))
		pos++
	}
	return sdf.ResumeProcessingIn(0)
}

// A source that checkpoints every few elements runs to completion with
// every element counted exactly once.
func TestSelfCheckpointingSourceCountsEachElementOnce(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	out := beam.ParDo(s, &checkpointEvery3{}, beam.Impulse(s))
	passert.Count(s, out, "elements", 100)
	passert.Equals(s, stats.Sum(s, out), 4950)
	if err := runPipeline(t, p); err != nil {
		t.Fatal(err)
	}
}
