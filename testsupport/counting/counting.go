// Package counting is a Go SDK streaming pipeline with user state and a
// windowed count whose results are read from a job's committed metrics,
// for the tests of savepoints and restores.
package counting

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/periodic"
)

func init() {
	register.DoFn2x2[beam.EventTime, []byte, int, int](&tickKeyFn{})
	register.DoFn2x2[beam.EventTime, []byte, int, string](&tickKeyStrFn{})
	register.DoFn7x1[context.Context, beam.EventTime, state.Provider, timers.Provider, int, beam.V, func(int, beam.V), error](&runningFn{})
	register.Function2x2(scaleFn)
	register.DoFn4x0[context.Context, beam.Window, int, func(*beam.V) bool](&reportFn{})
	register.Emitter2[int, beam.V]()
	register.Iter1[beam.V]()
}

// Keys is how many keys Pipeline spreads its ticks over.
const Keys = 3

// Pipeline is an unbounded pipeline with user state and a windowed
// count, whose results a test reads from the job's committed metrics
// (namespace "counting"): a periodic impulse from start to end, every
// interval; each tick keyed by Key; a stateful DoFn keeping each
// key's running count (distribution "seen_k<key>": its max is the last
// count) and flushing it from an event-time timer chain ("flushed_k<key>",
// runningFn); one-second fixed windows and a GroupByKey; and per key and
// window the count (counter "count_w<window start ms>_k<key>") and how
// many times that pane fired ("fires_w<...>_k<key>"). With
// stringValues the values are strings (the stateful step's value coder
// changes; its unique name does not).
func Pipeline(start, end time.Time, interval time.Duration, stringValues bool) func(beam.Scope) {
	return Version(start, end, interval, Variant{StringValues: stringValues})
}

// Variant is a version of Pipeline, as a job updated in place changes:
// a changed value coder of the stateful step (StringValues), a
// stateless step added after it (Scale: another fused plan), and the
// stateful step under another scope (RunningScope, "running" if empty).
type Variant struct {
	StringValues bool
	Scale        bool
	RunningScope string
}

// Version is Pipeline as v changes it.
func Version(start, end time.Time, interval time.Duration, v Variant) func(beam.Scope) {
	stringValues := v.StringValues
	running := v.RunningScope
	if running == "" {
		running = "running"
	}
	return func(s beam.Scope) {
		ticks := periodic.Impulse(s.Scope("ticks"), start, end, interval, false)
		var keyed beam.PCollection
		if stringValues {
			keyed = beam.ParDo(s.Scope("key"), &tickKeyStrFn{IntervalMs: interval.Milliseconds()}, ticks)
		} else {
			keyed = beam.ParDo(s.Scope("key"), &tickKeyFn{IntervalMs: interval.Milliseconds()}, ticks)
		}
		seen := beam.ParDo(s.Scope(running), &runningFn{Seen: state.MakeValueState[int]("seen"), Last: state.MakeValueState[int64]("last"), Flush: timers.InEventTime("flush")}, keyed)
		if v.Scale {
			seen = beam.ParDo(s.Scope("scale"), scaleFn, seen)
		}
		win := beam.WindowInto(s.Scope("window"), window.NewFixedWindows(time.Second), seen)
		grouped := beam.GroupByKey(s.Scope("group"), win)
		beam.ParDo0(s.Scope("report"), &reportFn{}, grouped)
	}
}

// Key is the key of a tick at ts (ms) every intervalMs: it does
// not depend on the impulse's start, so a pipeline whose start moved keys
// the same ticks alike.
func Key(ts, intervalMs int64) int { return int(ts / intervalMs % Keys) }

type tickKeyFn struct{ IntervalMs int64 }

func (f *tickKeyFn) ProcessElement(ts beam.EventTime, _ []byte) (int, int) {
	return Key(int64(ts), f.IntervalMs), int(int64(ts) / f.IntervalMs)
}

type tickKeyStrFn struct{ IntervalMs int64 }

func (f *tickKeyStrFn) ProcessElement(ts beam.EventTime, _ []byte) (int, string) {
	return Key(int64(ts), f.IntervalMs), fmt.Sprint(int64(ts) / f.IntervalMs)
}

// scaleFn is a stateless step that passes its elements on.
func scaleFn(k int, v beam.V) (int, beam.V) { return k, v }

// runningFn counts each key's elements in user state, and keeps an
// event-time timer chain per key: its first element sets the timer a
// second on; each firing reports the count it finds (distribution
// "flushed_k<key>") and sets the timer a second after its own time while
// the key had an element within the second before it (Last: the key's
// latest element's time; every element before a firing was processed,
// as the watermark passed it). So the chain goes on while the key's
// ticks flow, and its last firing, past every element, finds the key's
// total; only the chain re-arms the timer, so the total is flushed only
// if the timer was carried across every savepoint and update.
type runningFn struct {
	Seen  state.Value[int]
	Last  state.Value[int64]
	Flush timers.EventTime
}

// OnTimer reports the key's count and re-arms while its ticks flow.
func (f *runningFn) OnTimer(ctx context.Context, ts beam.EventTime, sp state.Provider, tp timers.Provider, k int, _ timers.Context, emit func(int, beam.V)) error {
	n, _, err := f.Seen.Read(sp)
	if err != nil {
		return err
	}
	beam.NewDistribution("counting", fmt.Sprintf("flushed_k%d", k)).Update(ctx, int64(n))
	last, _, err := f.Last.Read(sp)
	if err == nil && int64(ts)-1000 <= last {
		f.Flush.Set(tp, ts.ToTime().Add(time.Second))
	}
	return err
}

func (f *runningFn) ProcessElement(ctx context.Context, ts beam.EventTime, sp state.Provider, tp timers.Provider, k int, v beam.V, emit func(int, beam.V)) error {
	n, _, err := f.Seen.Read(sp)
	if err != nil {
		return err
	}
	if n++; n == 1 {
		f.Flush.Set(tp, ts.ToTime().Add(time.Second))
	}
	if err := f.Seen.Write(sp, n); err != nil {
		return err
	}
	if err := f.later(sp, int64(ts)); err != nil {
		return err
	}
	beam.NewDistribution("counting", fmt.Sprintf("seen_k%d", k)).Update(ctx, int64(n))
	emit(k, v)
	return nil
}

// later keeps the latest element time of the key in Last.
func (f *runningFn) later(sp state.Provider, ts int64) error {
	last, ok, err := f.Last.Read(sp)
	if err != nil || (ok && last >= ts) {
		return err
	}
	return f.Last.Write(sp, ts)
}

// reportFn reports a window's count of a key.
type reportFn struct{}

func (f *reportFn) ProcessElement(ctx context.Context, w beam.Window, k int, vs func(*beam.V) bool) {
	n := int64(0)
	for v := beam.V(nil); vs(&v); {
		n++
	}
	at := int64(w.MaxTimestamp()) + 1 - int64(time.Second/time.Millisecond)
	suffix := fmt.Sprintf("_w%d_k%d", at, k)
	beam.NewCounter("counting", "count"+suffix).Inc(ctx, n)
	beam.NewCounter("counting", "fires"+suffix).Inc(ctx, 1)
}
