package execute

import (
	"reflect"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/rtrackers/offsetrange"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
)

func init() {
	beam.RegisterType(reflect.TypeOf((*pacedInts)(nil)).Elem())
	beam.RegisterFunction(slowInt)
}

// pacedInts is an unbounded source of [0, N): PerTick positions, then a
// resume after EveryMs, so the job's input rate is steady.
// With Hold set, it stops at position Hold while pacedHeld is set: an
// idle streaming job until the test lets it finish.
type pacedInts struct {
	WholeRange
	PerTick, EveryMs, Hold int64
}

// pacedHeld holds pacedInts with a Hold; the workers run in this process.
var pacedHeld atomic.Bool

func (fn *pacedInts) ProcessElement(rt *sdf.LockRTracker, _ []byte, emit func(int64)) sdf.ProcessContinuation {
	start := rt.GetRestriction().(offsetrange.Restriction).Start
	if fn.Hold > 0 && start >= fn.Hold && pacedHeld.Load() {
		return sdf.ResumeProcessingIn(time.Duration(fn.EveryMs) * time.Millisecond)
	}
	for pos := start; pos < start+fn.PerTick; pos++ {
		if !rt.TryClaim(pos) {
			return sdf.StopProcessing()
		}
		emit(pos)
	}
	return sdf.ResumeProcessingIn(time.Duration(fn.EveryMs) * time.Millisecond)
}

// slowInt spends 20 ms on each element: 50 a second a bundle.
func slowInt(n int64) int64 {
	time.Sleep(20 * time.Millisecond)
	return n
}

// An environment on a worker pool of one worker grows on that pool:
// 100 elements a second into a stage of 20 ms an element need 2 busy
// seconds a second, so DS2 (the job's own autoscaling options) asks the
// pool for two more workers with StartWorker while the job runs, and
// every element still comes out once.
func TestAutoscalingGrowsOnWorkerPool(t *testing.T) {
	const n = 800
	want := make([]any, n)
	for i := range want {
		want[i] = int64(i)
	}
	p, s := beam.NewPipelineWithRoot()
	src := beam.ParDo(s, &pacedInts{WholeRange: WholeRange{N: n}, PerTick: 10, EveryMs: 100}, beam.Impulse(s))
	passert.Equals(s, beam.ParDo(s, slowInt, beam.Reshuffle(s, src)), want...)
	pr, err := runOnPoolsLogged(t, p, func(live string) string { return "go=" + live + "/1" }, map[string]any{
		"beam:option:autoscaling:v1": "ds2", "beam:option:max_workers:v1": "3",
		"beam:option:autoscaling_interval:v1": "300ms",
	})
	log := pr.log.String()
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	if c := strings.Count(log, `msg="worker connected"`); c < 2 || c > 3 {
		t.Errorf("%d workers connected to the pool, want the first and one or two of a scale-up:\n%s", c, log)
	}
	if !regexp.MustCompile(`msg=autoscaling job=\S+ env=go from=1 to=[23] why="scale up`).MatchString(log) {
		t.Errorf("no scale-up decision logged:\n%s", log)
	}
}

// An idle streaming job on a worker pool of three gives two workers back
// once the scale-down interval and window have passed: each is drained
// and its pool asked to stop it; released, the job ends with every
// element.
func TestAutoscalingDrainsPoolWorkers(t *testing.T) {
	const n = 40
	want := make([]any, n)
	for i := range want {
		want[i] = int64(i)
	}
	pacedHeld.Store(true)
	defer pacedHeld.Store(false)
	p, s := beam.NewPipelineWithRoot()
	src := beam.ParDo(s, &pacedInts{WholeRange: WholeRange{N: n}, PerTick: 10, EveryMs: 50, Hold: 20}, beam.Impulse(s))
	passert.Equals(s, beam.ParDo(s, slowInt, beam.Reshuffle(s, src)), want...)
	drained := &releaseAfter{line: "scale-down: worker drained and stopped", n: 2}
	pr, err := runOnPoolsWatched(t, p, func(live string) string { return "go=" + live + "/3" }, map[string]any{
		"autoscaling": "ds2", "min_workers": "1", "autoscaling_interval": "300ms", "scale_down_interval": "2s",
		"scale_down_window": "1s",
	}, drained)
	log := pr.log.String()
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	if !regexp.MustCompile(`msg=autoscaling job=\S+ env=go from=3 to=1 why="scale down`).MatchString(log) {
		t.Errorf("no scale-down 3 -> 1 logged:\n%s", log)
	}
	if c := strings.Count(log, "scale-down: worker drained and stopped"); c != 2 {
		t.Errorf("%d workers drained and stopped, want 2:\n%s", c, log)
	}
}

// releaseAfter lets pacedInts finish once the runner logged line n times.
type releaseAfter struct {
	mu   sync.Mutex
	line string
	n    int
}

func (r *releaseAfter) Write(b []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n -= strings.Count(string(b), r.line); r.n <= 0 {
		pacedHeld.Store(false)
	}
	return len(b), nil
}
