package execute

import (
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/rtrackers/offsetrange"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/periodic"
)

func init() {
	beam.RegisterType(reflect.TypeOf((*delayedResumer)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*wallClockSeen)(nil)).Elem())
}

// wallClock holds, by run, the wall-clock times a test's DoFns noted; the
// loopback worker runs in this process.
var wallClock struct {
	sync.Mutex
	runs map[string][]time.Time
}

func noteWallClock(run string, at ...time.Time) {
	wallClock.Lock()
	defer wallClock.Unlock()
	if wallClock.runs == nil {
		wallClock.runs = map[string][]time.Time{}
	}
	wallClock.runs[run] = append(wallClock.runs[run], at...)
}

// resetWallClock forgets what a run noted before (go test -count=N).
func resetWallClock(run string) {
	wallClock.Lock()
	defer wallClock.Unlock()
	delete(wallClock.runs, run)
}

func wallClockOf(run string) []time.Time {
	wallClock.Lock()
	defer wallClock.Unlock()
	return append([]time.Time(nil), wallClock.runs[run]...)
}

// delayedResumer claims one position of [0, N) per call and asks to be
// resumed Delay later, noting when each call began and returned.
type delayedResumer struct {
	WholeRange
	Run   string
	Delay time.Duration
}

func (fn *delayedResumer) ProcessElement(rt *sdf.LockRTracker, _ []byte, emit func(int64)) sdf.ProcessContinuation {
	began := time.Now()
	pos := rt.GetRestriction().(offsetrange.Restriction).Start
	if !rt.TryClaim(pos) {
		noteWallClock(fn.Run, began, time.Now())
		return sdf.StopProcessing()
	}
	emit(pos)
	noteWallClock(fn.Run, began, time.Now())
	return sdf.ResumeProcessingIn(fn.Delay)
}

// A splittable DoFn that asks to resume after a delay is not resumed
// before the delay has passed on the wall clock, after each of its
// self-checkpoints, and each position it claims is output once.
func TestResumeDelayWaitsOnWallClock(t *testing.T) {
	const run, n, delay = "resume-delay", 4, 400 * time.Millisecond
	resetWallClock(run)
	p, s := beam.NewPipelineWithRoot()
	out := beam.ParDo(s, &delayedResumer{WholeRange: WholeRange{N: n}, Run: run, Delay: delay}, beam.Impulse(s))
	passert.Equals(s, out, int64(0), int64(1), int64(2), int64(3))
	if err := runPipeline(t, p); err != nil {
		t.Fatal(err)
	}
	calls := wallClockOf(run) // began, returned, began, returned, ...
	if len(calls) < 2*n {
		t.Fatalf("%d calls, want at least %d (one per position)", len(calls)/2, n)
	}
	for i := 2; i+1 < len(calls); i += 2 {
		if waited := calls[i].Sub(calls[i-1]); waited < delay {
			t.Errorf("call %d began %v after call %d returned asking for %v", i/2, waited, i/2-1, delay)
		}
	}
}

// wallClockSeen notes, for each element, when it reached it and its
// event time.
type wallClockSeen struct{ Run string }

func (f *wallClockSeen) ProcessElement(et beam.EventTime, _ []byte) {
	noteWallClock(f.Run, time.Now(), et.ToTime())
}

// periodic.Impulse (a splittable DoFn that resumes itself until its next
// tick is due) paces its outputs on the wall clock: one per interval, not
// several at once, and none before its time. Ticks due before the job was
// running come together (the source catches up); the later ones are
// paced.
func TestPeriodicImpulseOutputsPacedOnWallClock(t *testing.T) {
	const run, interval, ticks = "periodic-paced", 500 * time.Millisecond, 8
	resetWallClock(run)
	p, s := beam.NewPipelineWithRoot()
	start := time.Now().Add(time.Second)
	imp := periodic.Impulse(s, start, start.Add(ticks*interval), interval, false)
	beam.ParDo0(s, &wallClockSeen{Run: run}, imp)
	if err := runPipeline(t, p); err != nil {
		t.Fatal(err)
	}
	noted := wallClockOf(run) // seen, event time, seen, event time, ...
	if len(noted) != 2*ticks {
		t.Fatalf("%d ticks seen, want %d", len(noted)/2, ticks)
	}
	var paced []time.Time
	for i := 0; i < len(noted); i += 2 {
		seen, due := noted[i], noted[i+1]
		if seen.Before(due) {
			t.Errorf("tick %d seen at %v, before its time %v", i/2, seen, due)
		}
		if due.After(noted[0]) {
			paced = append(paced, seen)
		}
	}
	if len(paced) < 3 {
		t.Fatalf("only %d ticks were due after the job ran", len(paced))
	}
	// Each is due one interval after the one before; a runner that held
	// the source back would hand several out together. A resume may be
	// late on a loaded machine, by up to 3/4 of an interval.
	for i := 1; i < len(paced); i++ {
		if gap := paced[i].Sub(paced[i-1]); gap < interval/4 {
			t.Errorf("paced tick %d seen %v after the one before, want about %v", i, gap, interval)
		}
	}
}

// The engine's clock is the wall clock truncated to whole milliseconds: a
// requested delay is rounded up and given one more, so a resume at the
// engine's now plus it never comes before the delay on the wall clock.
func TestWallDelayNeverShort(t *testing.T) {
	for d, want := range map[time.Duration]int64{
		0: 0, -time.Second: 0, time.Nanosecond: 2,
		400 * time.Millisecond: 401, 399*time.Millisecond + 900*time.Microsecond: 401,
	} {
		if got := wallDelayMs(d); got != want {
			t.Errorf("wallDelayMs(%v) = %d, want %d", d, got, want)
		}
	}
}
