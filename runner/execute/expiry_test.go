package execute

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/beam-runner/beam-runner/runner/jobs"
)

func init() {
	beam.RegisterType(reflect.TypeOf((*countOnExpiry)(nil)).Elem())
	beam.RegisterFunction(stampByValue)
}

// stampByValue keys v by v%3 and stamps it at v milliseconds.
func stampByValue(v int) (beam.EventTime, int, int) {
	return mtime.FromMilliseconds(int64(v)), v % 3, v
}

// countOnExpiry buffers each key's values in a window and emits
// "key:count" from its timer family Exp, which it never sets: the test
// declares that family the DoFn's OnWindowExpiration family (as Java's
// SDK does for @OnWindowExpiration), so only the runner sets its timers.
type countOnExpiry struct {
	Bag state.Bag[int]
	Exp timers.EventTime
}

func (f *countOnExpiry) ProcessElement(sp state.Provider, tp timers.Provider, k, v int, _ func(string)) error {
	return f.Bag.Add(sp, v)
}

func (f *countOnExpiry) OnTimer(sp state.Provider, tp timers.Provider, k int, _ timers.Context, emit func(string)) error {
	vs, _, err := f.Bag.Read(sp)
	emit(fmt.Sprintf("%d:%d", k, len(vs)))
	return err
}

// declareExpiry makes the timer family fam of every ParDo that declares
// it the ParDo's OnWindowExpiration family.
func declareExpiry(fam string) func(*pipepb.Pipeline) error {
	return func(p *pipepb.Pipeline) error {
		return editParDos(p, "beam:requirement:pardo:on_window_expiration:v1", func(pl *pipepb.ParDoPayload) bool {
			if _, ok := pl.GetTimerFamilySpecs()[fam]; !ok {
				return false
			}
			pl.OnWindowExpirationTimerFamilySpec = fam
			return true
		})
	}
}

// The runner fires an OnWindowExpiration timer once per key and window
// with input, after all of the window's input, with the state intact.
func TestOnWindowExpirationFiresPerKeyAndWindow(t *testing.T) {
	for _, fixed := range []bool{false, true} {
		t.Run(fmt.Sprintf("fixed=%v", fixed), func(t *testing.T) {
			p, s := beam.NewPipelineWithRoot()
			vals := make([]int, 100)
			for i := range vals {
				vals[i] = i
			}
			in := beam.ParDo(s, stampByValue, beam.CreateList(s, vals))
			if fixed {
				in = beam.WindowInto(s, window.NewFixedWindows(50*time.Millisecond), in)
			}
			counts := beam.ParDo(s, &countOnExpiry{Bag: state.MakeBagState[int]("bag"), Exp: timers.InEventTime("exp")}, in)
			want := map[string]int{}
			for _, v := range vals {
				w := 0
				if fixed {
					w = v / 50
				}
				want[fmt.Sprintf("%d/%d", v%3, w)]++
			}
			var exp []any
			for kw, n := range want {
				var k, w int
				fmt.Sscanf(kw, "%d/%d", &k, &w)
				exp = append(exp, fmt.Sprintf("%d:%d", k, n))
			}
			passert.Equals(s, beam.WindowInto(s, window.NewGlobalWindows(), counts), exp...)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if err := runOnEdited(ctx, New(Options{}), p, &jobs.Job{ID: "test", Name: t.Name()}, map[string]any{}, declareExpiry("exp")); err != nil {
				t.Fatal(err)
			}
		})
	}
}
