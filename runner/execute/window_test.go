package execute

import (
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"
)

func init() {
	beam.RegisterFunction(stampSeconds)
	beam.RegisterFunction(keyOne)
	beam.RegisterFunction(multimapLookup)
}

// stampSeconds gives element n the event time n seconds.
func stampSeconds(n int) (beam.EventTime, int) {
	return mtime.FromTime(time.Unix(int64(n), 0)), n
}

func keyOne(n int) (string, int) { return "k", n }

func multimapLookup(k string, lookup func(string) func(*int) bool) int {
	sum := 0
	var v int
	iter := lookup(k)
	for iter(&v) {
		sum += v
	}
	return sum
}

func windowedSums(t *testing.T, fn *window.Fn, in []int, want ...int) {
	t.Helper()
	p, s := beam.NewPipelineWithRoot()
	stamped := beam.ParDo(s, stampSeconds, beam.CreateList(s, in))
	windowed := beam.WindowInto(s, fn, stamped)
	sums := stats.SumPerKey(s, beam.ParDo(s, keyOne, windowed))
	passert.Equals(s, beam.WindowInto(s, window.NewGlobalWindows(), beam.DropKey(s, sums)), toAny(want)...)
	if err := runPipeline(t, p); err != nil {
		t.Fatal(err)
	}
}

func toAny(xs []int) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

func TestFixedWindows(t *testing.T) {
	// Windows [0,10) and [10,20): 1+2+9 and 10+15.
	windowedSums(t, window.NewFixedWindows(10*time.Second), []int{1, 2, 9, 10, 15}, 12, 25)
}

func TestSlidingWindows(t *testing.T) {
	// Size 10s every 5s: element 7 is in [0,10) and [5,15); 12 in [5,15), [10,20).
	windowedSums(t, window.NewSlidingWindows(5*time.Second, 10*time.Second), []int{7, 12}, 7, 19, 12)
}

func TestSessionWindows(t *testing.T) {
	// Gap 5s: 1,3,6 merge into one session; 20,22 into another.
	windowedSums(t, window.NewSessions(5*time.Second), []int{1, 3, 6, 20, 22}, 10, 42)
}

func TestFlattenWithItself(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	in := beam.Create(s, 1, 2)
	passert.Equals(s, beam.Flatten(s, in, in), 1, 2, 1, 2)
	if err := runPipeline(t, p); err != nil {
		t.Fatal(err)
	}
}

func TestMultimapSideInput(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	side := beam.ParDo(s, keyOne, beam.Create(s, 1, 2, 3))
	main := beam.Create(s, "k", "x")
	got := beam.ParDo(s, multimapLookup, main, beam.SideInput{Input: side})
	passert.Equals(s, got, 6, 0)
	if err := runPipeline(t, p); err != nil {
		t.Fatal(err)
	}
}
