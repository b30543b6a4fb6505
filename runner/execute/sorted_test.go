package execute

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"
	"github.com/beam-runner/beam-runner/runner/jobs"
)

func init() {
	beam.RegisterType(reflect.TypeOf((*diffToLast)(nil)).Elem())
	beam.RegisterFunction(stampOneKey)
}

// stampOneKey keys every value by "" and stamps it at v milliseconds.
func stampOneKey(v int) (beam.EventTime, string, int) {
	return mtime.FromMilliseconds(int64(v)), "", v
}

// diffToLast emits each value less the one before it in the order it saw
// them (the first less itself minus one): all ones iff its input is
// sorted, as Java's ParDoTest#testRequiresTimeSortedInput checks.
type diffToLast struct {
	Last state.Value[int]
}

func (f *diffToLast) ProcessElement(sp state.Provider, _ string, v int) (int, error) {
	last, ok, err := f.Last.Read(sp)
	if err != nil {
		return 0, err
	}
	if !ok {
		last = v - 1
	}
	return v - last, f.Last.Write(sp, v)
}

// requireSorted sets requires_time_sorted_input on every stateful ParDo,
// as Java's SDK does for @RequiresTimeSortedInput.
func requireSorted(p *pipepb.Pipeline) error {
	return editParDos(p, "beam:requirement:pardo:time_sorted_input:v1", func(pl *pipepb.ParDoPayload) bool {
		pl.RequiresTimeSortedInput = len(pl.GetStateSpecs()) > 0
		return pl.RequiresTimeSortedInput
	})
}

// A time-sorted stateful DoFn sees its key's values in timestamp order
// though they were created in reverse; checked as Java checks it, by the
// sum of the differences (every one is 1 only when sorted).
func TestRequiresTimeSortedInput(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	vals := make([]int, 1000)
	for i := range vals {
		vals[i] = len(vals) - i
	}
	diffs := beam.ParDo(s, &diffToLast{Last: state.MakeValueState[int]("last")}, beam.ParDo(s, stampOneKey, beam.CreateList(s, vals)))
	passert.Equals(s, stats.Max(s, diffs), 1)
	passert.Equals(s, stats.Min(s, diffs), 1)
	passert.Count(s, diffs, "diffs", len(vals))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := runOnEdited(ctx, New(Options{}), p, &jobs.Job{ID: "test", Name: t.Name()}, map[string]any{}, requireSorted); err != nil {
		t.Fatal(err)
	}
}
