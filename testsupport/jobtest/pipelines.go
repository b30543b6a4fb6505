package jobtest

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/periodic"
)

func init() {
	register.Function1x2(keyMod10)
	register.Function3x0(sumValues)
	register.DoFn3x0[context.Context, []byte, func(int, int)](&numberFn{})
	register.Iter1[int]()
	register.Emitter1[string]()
	register.Emitter2[int, int]()
}

// keyMod10 keys a number by its remainder modulo 10.
func keyMod10(n int) (int, int) { return n % 10, n }

func sumValues(k int, vs func(*int) bool, emit func(string)) {
	total := 0
	for v := 0; vs(&v); {
		total += v
	}
	emit(fmt.Sprintf("%d: %d", k, total))
}

// Streaming is an unbounded pipeline: a periodic impulse every interval
// for an hour, keyed, grouped in one-second windows and summed. It runs
// until drained or cancelled.
func Streaming(interval time.Duration) func(beam.Scope) {
	return func(s beam.Scope) {
		start := time.Now()
		ticks := periodic.Impulse(s.Scope("ticks"), start, start.Add(time.Hour), interval, false)
		seq := beam.ParDo(s.Scope("number"), &numberFn{}, ticks)
		win := beam.WindowInto(s, window.NewFixedWindows(time.Second), seq)
		grouped := beam.GroupByKey(s, win)
		beam.ParDo(s.Scope("sum"), sumValues, grouped)
	}
}

// Batch is a bounded pipeline over n numbers: keyed, grouped and summed.
func Batch(n int) func(beam.Scope) {
	return func(s beam.Scope) {
		nums := make([]int, n)
		for i := range nums {
			nums[i] = i
		}
		keyed := beam.ParDo(s, keyMod10, beam.CreateList(s, nums))
		grouped := beam.GroupByKey(s, keyed)
		beam.ParDo(s.Scope("sum"), sumValues, grouped)
	}
}

var (
	ticksSeen = beam.NewCounter("jobtest", "ticks")
	tickValue = beam.NewDistribution("jobtest", "tick_number")
)

// numberFn numbers the impulses it sees, keyed modulo 10, and counts them
// in user metrics.
type numberFn struct{ n int64 }

func (f *numberFn) ProcessElement(ctx context.Context, _ []byte, emit func(int, int)) {
	f.n++
	ticksSeen.Inc(ctx, 1)
	tickValue.Update(ctx, f.n)
	emit(int(f.n%10), int(f.n))
}
