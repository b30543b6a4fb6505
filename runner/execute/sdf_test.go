package execute

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
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

func init() {
	beam.RegisterType(reflect.TypeOf((*countOnTimer)(nil)).Elem())
	beam.RegisterFunction(keyByMod3)
}

func keyByMod3(i int) (int, int) { return i % 3, i }

// countOnTimer buffers each key's values and emits "key:count" from an
// event-time timer set once, on the key's first value.
type countOnTimer struct {
	Bag  state.Bag[int]
	Seen state.Value[bool]
	End  timers.EventTime
}

func (f *countOnTimer) ProcessElement(sp state.Provider, tp timers.Provider, k, v int, _ func(string)) error {
	seen, _, err := f.Seen.Read(sp)
	if err != nil {
		return err
	}
	if !seen {
		f.Seen.Write(sp, true)
		f.End.Set(tp, time.UnixMilli(1<<40))
	}
	return f.Bag.Add(sp, v)
}

func (f *countOnTimer) OnTimer(sp state.Provider, tp timers.Provider, k int, _ timers.Context, emit func(string)) error {
	vs, _, err := f.Bag.Read(sp)
	emit(fmt.Sprintf("%d:%d", k, len(vs)))
	return err
}

// A timer fires after every value of its key that precedes it, also when
// the last values arrive with the residual that completes the source (Go's
// SDK fires a bundle's timers before its elements).
func TestTimerSeesInputOfSelfCheckpointingSource(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	out := beam.ParDo(s, &checkpointEvery3{}, beam.Impulse(s))
	counts := beam.ParDo(s, &countOnTimer{
		Bag: state.MakeBagState[int]("bag"), Seen: state.MakeValueState[bool]("seen"), End: timers.InEventTime("end"),
	}, beam.ParDo(s, keyByMod3, out))
	passert.Equals(s, counts, "0:34", "1:33", "2:33")
	if err := runPipeline(t, p); err != nil {
		t.Fatal(err)
	}
}
