package lifecycle

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"
)

// failMarker is in the error failingFn returns, so a check can find that
// exact error in the job's messages.
const failMarker = "lifecycle-check: deliberate DoFn failure 5d1c"

// elementsCounter counts the elements countFn sees.
const elementsCounter = "lifecycle_elements"

var elements = beam.NewCounter("lifecycle", elementsCounter)

// slowActive is how many slowFn calls are running in this process: with
// LOOPBACK the SDK harness runs here, so a check can see the DoFn start.
var slowActive atomic.Int32

func init() {
	register.Function2x1(countFn)
	register.Function1x1(squareFn)
	register.Function1x2(failingFn)
	register.DoFn3x1[context.Context, []byte, func(int), error](&slowFn{})
	register.Emitter1[int]()
}

func countFn(ctx context.Context, x int) int {
	elements.Inc(ctx, 1)
	return x
}

func squareFn(x int) int { return x * x }

func failingFn(x int) (int, error) {
	if x == 3 {
		return 0, fmt.Errorf("%s on element %d", failMarker, x)
	}
	return x, nil
}

// slowFn emits a number every 50ms for Minutes minutes, or until its
// context ends: long enough that only a cancel ends the job in time.
type slowFn struct{ Minutes int }

func (f *slowFn) ProcessElement(ctx context.Context, _ []byte, emit func(int)) error {
	slowActive.Add(1)
	defer slowActive.Add(-1)
	end := time.Now().Add(time.Duration(f.Minutes) * time.Minute)
	for i := 0; time.Now().Before(end); i++ {
		emit(i)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

func ints(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i + 1
	}
	return out
}

// sumOfSquares is a small pipeline with a combiner and an assertion: it
// fails unless the sum of i² for i in 1..n is right, and counts elements.
func sumOfSquares(n int) func(beam.Scope) {
	want := n * (n + 1) * (2*n + 1) / 6
	return func(s beam.Scope) {
		in := beam.ParDo(s, countFn, beam.CreateList(s, ints(n)))
		sum := stats.Sum(s, beam.ParDo(s, squareFn, in))
		passert.Equals(s, sum, want)
	}
}

// failing runs failingFn over 1..5.
func failing(s beam.Scope) {
	beam.ParDo(s, failingFn, beam.CreateList(s, ints(5)))
}

// slow runs slowFn once and counts what it emits.
func slow(minutes int) func(beam.Scope) {
	return func(s beam.Scope) {
		beam.ParDo(s, countFn, beam.ParDo(s, &slowFn{Minutes: minutes}, beam.Impulse(s)))
	}
}

// runGood runs sumOfSquares(n) on LOOPBACK and requires DONE with n
// elements counted: an assertion that never ran must not pass.
func (s *Session) runGood(ctx context.Context, name string, n int) error {
	p, err := s.loopback(ctx, sumOfSquares(n))
	if err != nil {
		return err
	}
	id, o, err := s.runJob(ctx, name, p)
	if err != nil {
		return err
	}
	if err := expectState(o, jobpb.JobState_DONE); err != nil {
		return err
	}
	got, err := s.counter(ctx, id, p, elementsCounter)
	if err != nil {
		return err
	}
	if got != int64(n) {
		return fmt.Errorf("counter %s = %d, want %d", elementsCounter, got, n)
	}
	return nil
}
