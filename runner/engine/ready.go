package engine

import (
	"fmt"
	"slices"

	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/runner/stagekind"
)

// Ready is everything the engine decided and the driver has not yet
// acknowledged (Advance). The driver handles its parts in the order of
// its fields:
//
//  1. Err: the engine failed (a malformed element, a spill that could not
//     be read back); the job fails with it, and nothing else is set.
//  2. Expired: drop these windows' user state before starting Bundles,
//     which may write the same windows' state anew.
//  3. Bundles: start each; later Commit, Fail or Retry it by its ID.
//  4. Splits: ask these running bundles to split; one that finished
//     meanwhile has nothing to split.
//  5. Done: the job is complete; nothing else will be decided.
//  6. Otherwise wait for a bundle's end, a split's or progress's answer,
//     a tick, or processing time WakeAt (when Wake is set), feed the
//     engine that event, then Advance past this Ready and read the next.
type Ready struct {
	Err     error
	Expired []StateWindow
	Bundles []Bundle
	Splits  []SplitRequest
	Done    bool
	// WakeAt is the earliest processing time, later than the engine's,
	// at which something could become due; Wake is false when nothing
	// waits on processing time. An idle streaming job depends on it to
	// fire its processing-time timers and triggers on time.
	WakeAt int64
	Wake   bool
}

// Ready returns the engine's decisions not yet acknowledged: the bundles
// that may start now, the splits Tick and Drain decided, the windows whose
// state expired, and whether and when the job goes on. It is a pure read:
// it changes nothing, and asked again before Advance it returns the same.
// The decisions are made by Advance (and the events: Tick, Drain and
// watermarks moving decide splits and expiries).
func (e *Engine) Ready() Ready {
	if e.flow.err != nil {
		return Ready{Err: e.flow.err}
	}
	rd := Ready{Splits: slices.Clone(e.splits), Done: e.flow.done()}
	rd.Expired = slices.Clone(e.flow.expired)
	sortStateWindows(rd.Expired)
	rd.Bundles = make([]Bundle, len(e.out))
	for i, b := range e.out {
		rd.Bundles[i] = b.Bundle
	}
	rd.WakeAt, rd.Wake = e.flow.nextWakeup()
	return rd
}

// Advance tells the engine the driver carried out rd, the Ready it read
// last (the zero Ready before the first), and fed it every event since;
// the engine forgets rd's decisions and makes its next ones, for the next
// Ready: it cuts the bundles that may start now, retries first, and, when
// nothing else can run and no bundle is in flight, applies the next
// TestStream event, so a TestStream advances only once the pipeline has
// settled. Decisions made after rd was read (a Tick's splits, say) stay
// for the next Ready: each list only grows at its end until acknowledged.
func (e *Engine) Advance(rd Ready) {
	e.acknowledge(rd)
	if e.flow.err == nil {
		e.out = append(e.out, e.readyNow()...)
	}
	e.checkInvariants("Advance")
}

// acknowledge forgets the decisions rd handed out: the first of each list,
// which grows only at its end.
func (e *Engine) acknowledge(rd Ready) {
	e.out = e.out[min(len(rd.Bundles), len(e.out)):]
	e.splits = e.splits[min(len(rd.Splits), len(e.splits)):]
	e.flow.expired = e.flow.expired[min(len(rd.Expired), len(e.flow.expired)):]
}

// readyNow cuts the bundles that may start now, retries first.
func (e *Engine) readyNow() []*bundle {
	if rs := e.takeRetries(); len(rs) > 0 {
		return append(rs, e.readyBundles()...)
	}
	for {
		out := e.readyBundles()
		if len(out) > 0 || len(e.flight) > 0 || e.flow.err != nil {
			return out
		}
		if !e.flow.applyNextEvent() {
			return nil
		}
	}
}

// readyBundles cuts what may start now; another pass runs the stages
// whose hold the last pass's cuts lifted (flowctl.go). Cuts only shrink
// queues, so holds only lift, and a pass per stage is the most it takes.
func (e *Engine) readyBundles() []*bundle {
	e.flow.topUpPanes()
	e.flow.updateHolds()
	out := e.readyPass()
	for range e.flow.stages {
		if e.flow.err != nil || !e.flow.updateHolds() {
			break
		}
		out = append(out, e.readyPass()...)
	}
	return out
}

func (e *Engine) readyPass() []*bundle {
	var out []*bundle
	for _, st := range e.flow.stages {
		if len(st.combines) > 0 {
			out = append(out, e.readyCombines(st)...)
		}
		if st.spec.Kind != stagekind.SDK || st.held() {
			continue
		}
		gate := !e.flow.sidesReady(st)
		if gate && !e.flow.gatesByWindow(st) {
			continue
		}
		e.flow.wakeResiduals(st)
		e.flow.releaseWaiting(st)
		free := e.flow.maxBundles(st) - len(st.flight)
		if free <= 0 {
			continue
		}
		if st.keyed != nil {
			bs, err := st.keyed.cut(e.flow.now, st.inWM, e.flow.canRun(st), free, func() *bundle { return e.newBundle(st) })
			if err != nil {
				e.flow.fail(fmt.Errorf("stage %s: input %s: %w", st.spec.ID, st.spec.Inputs[0], err))
				return append(out, bs...)
			}
			out = append(out, bs...)
			continue
		}
		bs, ok := e.readyPending(st, free, gate)
		out = append(out, bs...)
		if !ok {
			return out
		}
	}
	return out
}

// readyPending cuts bundles of up to free from an unkeyed stage's pending
// input, what gate holds back for its side input windows left pending;
// false if that failed the job.
func (e *Engine) readyPending(st *stage, free int, gate bool) ([]*bundle, bool) {
	if len(st.pending) == 0 || !e.flow.canRun(st) {
		return nil, true
	}
	in, later := e.flow.flowSlice(st)
	taken, bytes, rest, err := e.flow.pend.take(st, in)
	rest = append(rest, later...)
	if err != nil {
		e.flow.fail(fmt.Errorf("stage %s: %w", st.spec.ID, err))
		return nil, false
	}
	if gate {
		if taken, bytes, err = e.flow.holdWaiting(st, taken, bytes); err != nil {
			e.flow.fail(fmt.Errorf("stage %s: input %s: %w", st.spec.ID, st.spec.Inputs[0], err))
			return nil, false
		}
	}
	if len(taken) == 0 {
		// The budget is held by bundles in flight, or what was
		// taken waits for its side inputs.
		st.pending = rest
		return nil, true
	}
	st.pending = taken
	sets := e.cut(st, free)
	if len(sets) == 0 {
		return nil, false // cut failed the job
	}
	out := make([]*bundle, 0, len(sets))
	for i, in := range sets {
		b := e.start(st, in)
		// The bundles share the bytes they took from the budget.
		b.mem = bytes / len(sets)
		if i == 0 {
			b.mem += bytes % len(sets)
		}
		out = append(out, b)
	}
	st.pending = rest
	return out, true
}

// sidesReady reports whether st's side inputs are complete: a stage that
// does not take elements by their side input windows waits for it.
func (f *flow) sidesReady(st *stage) bool {
	for _, pc := range st.spec.SideInputs {
		if f.pcolls[pc].wm < coders.MaxTimestamp {
			return false
		}
	}
	return true
}

// canRun: in batch, a stage's main input must be complete, so the stage
// gets few large bundles.
func (f *flow) canRun(st *stage) bool {
	if f.spec.Streaming {
		return true
	}
	p := f.pcolls[st.spec.Inputs[0]]
	// A GroupByKey whose input is complete has fired every window; it
	// hands the panes out as they are read (panes.go).
	return p.wm >= coders.MaxTimestamp || (p.fromGBK != nil && p.fromGBK.inWM >= coders.MaxTimestamp)
}

// cut splits a stage's pending input into at most n bundles.
func (e *Engine) cut(st *stage, n int) []chunkSet {
	d := &Data{}
	minTS := coders.MaxTimestamp
	for _, c := range st.pending {
		d.Add(c.data)
		minTS = min(minTS, c.minTS)
	}
	if e.flow.spec.MinBundleBytes > 0 {
		n = min(n, max(1, d.Bytes/e.flow.spec.MinBundleBytes))
	}
	if n <= 1 {
		return []chunkSet{{d.Chunks, minTS}}
	}
	parts, err := coders.Split(d.Chunks, e.flow.pcolls[st.spec.Inputs[0]].spec.Codec, n)
	if err != nil {
		e.flow.fail(err)
		return nil
	}
	sets := make([]chunkSet, len(parts))
	for i, p := range parts {
		sets[i] = chunkSet{p, minTS} // a conservative hold for each part
	}
	return sets
}

type chunkSet struct {
	chunks [][]byte
	minTS  int64
}

func (e *Engine) start(st *stage, in chunkSet) *bundle {
	b := e.newBundle(st)
	b.Input, b.minTS = in.chunks, in.minTS
	return b
}

// newBundle registers an empty bundle of the stage as in flight.
func (e *Engine) newBundle(st *stage) *bundle {
	e.nextID++
	b := &bundle{Bundle: Bundle{ID: e.nextID, Stage: st.spec.ID, Attempt: 1}, minTS: coders.MaxTimestamp, started: e.flow.now, splitAt: e.flow.now, ckptAt: e.flow.now, split: newSplitBook()}
	e.flight[b.ID] = b
	st.flight[b.ID] = b
	return b
}

// applyNextEvent applies one event of the first TestStream with events
// left; after its last event a TestStream's watermark goes to the end of
// time. It reports whether anything changed.
func (f *flow) applyNextEvent() bool {
	for _, st := range f.stages {
		if st.spec.Kind != stagekind.TestStream || (len(st.events) == 0 && st.outWM >= coders.MaxTimestamp) {
			continue
		}
		if len(st.events) == 0 {
			f.setTestStreamWatermark(st, "", coders.MaxTimestamp)
			f.recompute()
			return true
		}
		ev := st.events[0]
		st.events = st.events[1:]
		switch ev.Kind {
		case AddElements:
			f.deliver(ev.PColl, ev.Elements)
		case AdvanceWatermark:
			f.setTestStreamWatermark(st, ev.PColl, ev.Watermark)
		case AdvanceProcessingTime:
			f.advanceTime(addSaturating(f.now, ev.Advance))
		}
		f.recompute()
		return true
	}
	return false
}

// setTestStreamWatermark moves one output's watermark (all outputs when pc
// is empty); the stage's own watermark is the least of its outputs'.
func (f *flow) setTestStreamWatermark(st *stage, pc string, wm int64) {
	least := coders.MaxTimestamp
	for _, out := range st.spec.Outputs {
		p := f.pcolls[out]
		if (pc == "" || pc == out) && wm > p.wm {
			p.wm = wm
		}
		least = min(least, p.wm)
	}
	st.outWM = least
}

// addSaturating adds without overflowing past the end of time: a
// TestStream advances processing time "to infinity" with a huge duration.
func addSaturating(t, d int64) int64 {
	if d > 0 && t > coders.MaxTimestamp-d {
		return coders.MaxTimestamp
	}
	return t + d
}
