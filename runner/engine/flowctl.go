package engine

import (
	"slices"

	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/runner/stagekind"
)

// Flow control keeps a streaming job's backlog in its sources. Each SDK
// stage's queued input (pending, filed by key) has a bound in bytes: about
// one second of what the stage consumed over the last measured second
// (Flink's buffer debloating targets 1 s), within a floor and a cap. While
// a stage is over its bound it holds its producers: the nearest SDK stages
// upstream of its main input, through GroupByKeys and Flattens. A held
// stage starts no bundles and resumes no residuals, and its running
// splittable bundles are asked to checkpoint, so an unbounded source stops
// reading until the stage drains. A held intermediate stage's own input
// then grows past its bound and holds its producers in turn. A running
// source bundle is also checkpointed each time it sends the least bound of
// the stages it feeds, so a source catching up in one call does not pour
// its whole backlog in at once.
//
// Why it cannot deadlock: a stage is never held by its own input, and a
// stage upstream of any side input is never held (feedsSide), so side
// inputs always complete. What a stage counts is input it will run once
// its side inputs are there, without more of its main input: pending,
// filed by key, or waiting for its side input windows (sidegate.go); not a
// time-sorted stage's input waiting for the main input's watermark, which
// a held producer holds. So the most downstream stage over its bound is
// held by nobody and drains: running bundles always finish, and what waits
// for side inputs gets them. Batch jobs are not flow-controlled: they must
// read everything anyway, and spill.

// FlowControl configures flow control; a nil one in the Spec turns it off.
type FlowControl struct {
	// MinBytes and MaxBytes bound each stage's queued-input bound once its
	// rate is measured; zero takes DefaultFlowMinBytes and
	// DefaultFlowMaxBytes.
	MinBytes, MaxBytes int64
	// StartBytes is the bound before the stage's rate is measured; zero
	// takes DefaultFlowStartBytes (never under MinBytes).
	StartBytes int64
}

// Default flow control bounds. A stage's bound is a second of its
// measured rate, at least 4 KiB and at most 64 MiB; until a bundle of it
// commits, 1 MiB, so a new job's fast stages are not held before their
// rate is known. The floor was 1 MiB whatever the rate: the elastic
// benchmark's stage of 16 ms a 10-byte Kafka record on one worker at 2R
// then held 26 s of work a bundle, and read on at the producer's rate
// with its windows' counts 38-65 s late, the backlog in the runner
// instead of in Kafka.
const (
	DefaultFlowMinBytes   = 4 << 10
	DefaultFlowStartBytes = 1 << 20
	DefaultFlowMaxBytes   = 64 << 20
)

// flowWindow is how long, in ms of processing time, a stage's consumed
// bytes are summed before its rate is taken: the bound's one second. A
// window without a commit goes on, up to flowIdleWindow, since a slow
// stage's bundles may take longer than a window.
const (
	flowWindow     = 1000
	flowIdleWindow = 10_000
)

// flowState is a stage's flow control bookkeeping: soft state, measured
// anew after a restore.
type flowState struct {
	consumed int64 // input bytes of bundles committed since windowAt
	windowAt int64 // processing time the current window began
	rate     int64 // bytes a second over the last full window
	over     bool  // over its bound: holding its producers
	// feedsSide: the stage is upstream of a side input, so never held.
	feedsSide bool
	heldBy    []string
	// pressMs is how long, in ms of processing time, the stage has been
	// over its bound since the job began (or was restored).
	pressMs int64
	// heldMs is how long, likewise, another stage's bound has held it.
	heldMs int64
}

// PressureStats is one stage's flow control state.
type PressureStats struct {
	// Holding: the stage is over its bound and holds its producers.
	Holding bool
	// HoldingMs is how long it has held them in all, in ms of processing
	// time: the driver's back-pressured ms a second are its increase.
	HoldingMs int64
	// HeldBy are the stages whose bounds hold this one now.
	HeldBy []string
	// HeldMs is how long they have held it in all, in ms of processing
	// time: the stage's back-pressured ms a second are its increase.
	HeldMs int64
	// QueuedBytes is its input counted against BoundBytes.
	QueuedBytes, BoundBytes int64
	// RateBytes is what it consumed a second, over the last second measured.
	RateBytes int64
}

// Pressure reports flow control per SDK stage of a streaming job, by
// stage ID; empty for a batch job. With flow control off only QueuedBytes
// is set.
func (e *Engine) Pressure() map[string]PressureStats {
	f := e.flow
	out := map[string]PressureStats{}
	if !f.spec.Streaming {
		return out
	}
	for _, st := range f.stages {
		if st.spec.Kind != stagekind.SDK {
			continue
		}
		ps := PressureStats{QueuedBytes: queuedBytes(st)}
		if f.flowOn() {
			ps.Holding, ps.HoldingMs, ps.RateBytes = st.fc.over, st.fc.pressMs, st.fc.rate
			ps.HeldBy, ps.BoundBytes = append([]string(nil), st.fc.heldBy...), f.flowBound(st)
			ps.HeldMs = st.fc.heldMs
		}
		out[st.spec.ID] = ps
	}
	return out
}

func (f *flow) flowOn() bool { return f.spec.Streaming && f.spec.Flow != nil }

// FlowControlled reports whether flow control holds this job's stages: a
// streaming job with it on.
func (e *Engine) FlowControlled() bool { return e.flow.flowOn() }

// flowBound is st's bound: a second of its measured rate, clamped; the
// start bound while it has none.
func (f *flow) flowBound(st *stage) int64 {
	lo, hi, start := f.spec.Flow.MinBytes, f.spec.Flow.MaxBytes, f.spec.Flow.StartBytes
	if lo <= 0 {
		lo = DefaultFlowMinBytes
	}
	if hi <= 0 {
		hi = DefaultFlowMaxBytes
	}
	if start <= 0 {
		start = DefaultFlowStartBytes
	}
	want := st.fc.rate * flowWindow / 1000
	if want <= 0 {
		want = start
	}
	return max(lo, min(want, max(hi, lo)))
}

// queuedBytes is st's input it can run without its main input's progress:
// pending chunks (spilled ones too), chunks waiting for side input windows
// and input filed under its keys.
func queuedBytes(st *stage) int64 {
	n := int64(pendingBytes(st))
	for _, c := range st.waiting {
		n += int64(len(c.data))
	}
	if st.keyed != nil {
		n += st.keyed.pendingBytes
	}
	return n
}

// overBound reports whether st's queued input is past its bound, or its
// input waits in a GroupByKey for it to take more (panesWaitFor).
func (f *flow) overBound(st *stage) bool {
	return st.spec.Kind == stagekind.SDK && (queuedBytes(st) > f.flowBound(st) || f.panesWaitFor(st))
}

// panesWaitFor reports whether panes a GroupByKey fired wait for st: the
// GroupByKey hands its readers only so much at a time (panes.go), and st
// is the reader with the most queued and in flight, which keeps them
// back. Its queue is then full however high its bound.
func (f *flow) panesWaitFor(st *stage) bool {
	g := f.pcolls[st.spec.Inputs[0]].fromGBK
	if g == nil || !g.gbk.Due() || f.paneBudget(g) != 0 {
		return false
	}
	mine := pendingBytes(st) + flightBytes(st)
	for _, c := range f.pcolls[g.spec.Outputs[0]].consumers {
		if pendingBytes(c)+flightBytes(c) > mine {
			return false
		}
	}
	return true
}

// updateHolds decides which stages are over their bound and which stages
// they hold; it reports whether a stage held before is held no more.
func (f *flow) updateHolds() (lifted bool) {
	if !f.flowOn() {
		return f.updateSpillHolds() // spillhold.go
	}
	was := map[*stage]bool{}
	for _, st := range f.stages {
		was[st] = st.held()
		st.fc.heldBy = st.fc.heldBy[:0]
	}
	defer func() {
		for _, st := range f.stages {
			lifted = lifted || (was[st] && !st.held())
		}
	}()
	for _, st := range f.stages {
		st.fc.over = f.overBound(st)
		if !st.fc.over {
			continue
		}
		for _, p := range f.producers(st) {
			p.fc.heldBy = append(p.fc.heldBy, st.spec.ID)
		}
	}
	return false
}

// flowSlice splits a flow-controlled stage's pending input into what its
// next bundles take, about its bound (at least one chunk), and what stays
// queued. Taking all of it would empty the queue into a few long bundles
// (a 1 ms-a-record stage took 140,000 records at once) and lift the hold
// on its producers while the backlog sat in flight, in the runner's
// memory and checkpoints; the rest stays counted against the bound, so
// its producers stay held until the stage has worked it off.
func (f *flow) flowSlice(st *stage) (take, later []chunk) {
	if !f.flowOn() {
		return st.pending, nil
	}
	bound, n := f.flowBound(st), int64(0)
	for i, c := range st.pending {
		size := int64(max(len(c.data), c.size))
		if n+size <= bound {
			n += size
			continue
		}
		head, tail, ok := f.cutChunk(st, c, bound-n)
		if !ok {
			return st.pending[:i+1], st.pending[i+1:]
		}
		take = append(slices.Clone(st.pending[:i]), head)
		return take, append([]chunk{tail}, st.pending[i+1:]...)
	}
	return st.pending, nil
}

// cutChunk splits an in-memory chunk after the element that reaches want
// bytes (at least one), for flowSlice: one chunk of a source's output can
// hold minutes of a slow stage's work. ok is false if the chunk is
// spilled, or taken whole anyway.
func (f *flow) cutChunk(st *stage, c chunk, want int64) (head, tail chunk, ok bool) {
	if c.data == nil || want >= int64(len(c.data)) {
		return c, chunk{}, false
	}
	cut, err := coders.BoundaryAfter(c.data, int(max(want, 1)), f.pcolls[st.spec.Inputs[0]].spec.Codec)
	if err != nil || cut >= len(c.data) {
		return c, chunk{}, false // a parse error fails the bundle that reads it, naming it
	}
	head = chunk{data: c.data[:cut:cut], minTS: c.minTS, mem: min(c.mem, cut)}
	tail = chunk{data: c.data[cut:], minTS: c.minTS, mem: c.mem - head.mem}
	return head, tail, true
}

// held reports whether a stage may start no bundles now.
func (st *stage) held() bool { return len(st.fc.heldBy) > 0 }

// producers are the SDK stages nearest upstream of st's main input,
// looking through GroupByKeys and Flattens; never st itself, nor a stage
// feeding a side input.
func (f *flow) producers(st *stage) []*stage {
	var out []*stage
	seen := map[*stage]bool{st: true}
	var walk func(pc string)
	walk = func(pc string) {
		for _, p := range f.stages {
			if seen[p] || !writes(p, pc) {
				continue
			}
			seen[p] = true
			switch p.spec.Kind {
			case stagekind.SDK:
				if !p.fc.feedsSide {
					out = append(out, p)
				}
			case stagekind.GBK:
				walk(p.spec.Inputs[0])
			case stagekind.Flatten:
				for _, in := range p.spec.Inputs {
					walk(in)
				}
			}
		}
	}
	walk(st.spec.Inputs[0])
	return out
}

func writes(st *stage, pc string) bool {
	for _, o := range st.spec.Outputs {
		if o == pc {
			return true
		}
	}
	return false
}

// noteConsumed counts a committed bundle's input toward its stage's rate.
func (f *flow) noteConsumed(st *stage, b *bundle) {
	for _, c := range b.Input {
		st.fc.consumed += int64(len(c))
	}
}

// flowTime moves flow control's clock from f.now to now: stages over
// their bound accrue pressure, and a rate window that ended is taken.
func (f *flow) flowTime(now int64) {
	if !f.flowOn() {
		return
	}
	for _, st := range f.stages {
		if st.fc.over {
			st.fc.pressMs += now - f.now
		}
		if st.held() {
			st.fc.heldMs += now - f.now
		}
		if d := now - st.fc.windowAt; d >= flowWindow && (st.fc.consumed > 0 || d >= flowIdleWindow) {
			st.fc.rate = st.fc.consumed * 1000 / d
			st.fc.consumed, st.fc.windowAt = 0, now
		}
	}
}

// restartFlow starts a restored engine's flow control afresh: its rates
// measured from the restored processing time, its holds from its input.
func (f *flow) restartFlow() {
	for _, st := range f.stages {
		st.fc.windowAt = f.now
	}
	f.updateHolds()
}

// flowCheckpoints are the checkpoints flow control asks of splittable
// (source) bundles: of a held stage's running bundles, once each, as a
// source reading on would only queue more input for the stage that holds
// it; and of any running source bundle each time it sends a bound's worth
// of output, the least bound of the stages it feeds, as a source catching
// up (PeriodicImpulse emits every overdue element in one call) would
// otherwise pour its whole backlog into the runner in one bundle. Those
// only of stages whose SDK checkpoints exactly (TimedCheckpoints), as
// streamCheckpoints: others are checkpointed only when they must.
func (e *Engine) flowCheckpoints() []SplitRequest {
	if !e.flow.flowOn() {
		return nil
	}
	e.flow.updateHolds()
	limits := e.flow.outputLimits()
	var out []SplitRequest
	for _, st := range e.flow.stages {
		limit, feeds := limits[st]
		if !st.spec.Splittable || (!st.held() && !feeds) {
			continue
		}
		for _, b := range oldestFirst(st.flight) {
			held := st.held() && !b.flowAsked
			if !held && (!feeds || b.out-b.outAtFlow < limit) {
				continue
			}
			b.flowAsked = b.flowAsked || st.held()
			b.outAtFlow = b.out
			b.ckptAt, b.splitAt = e.flow.now, e.flow.now
			out = append(out, SplitRequest{Bundle: b.ID})
		}
	}
	return out
}

// FlowTick, between two ticks, asks for the checkpoints flow control
// wants of running source bundles (flowCheckpoints) and nothing else.
// A Kafka read that resumes takes tens of thousands of records in its
// first few hundred milliseconds (its consumer's fetches come back at
// once): asked only every tick, it poured that burst into a stage whose
// bound was 1 MiB. The driver calls it often while a source runs under
// flow control; the other split policies keep the tick.
func (e *Engine) FlowTick() {
	if !e.draining {
		e.splits = append(e.splits, e.flowCheckpoints()...)
	}
}

// outputLimits is, for each splittable stage with TimedCheckpoints, the
// least bound of the stages it produces into.
func (f *flow) outputLimits() map[*stage]int64 {
	limits := map[*stage]int64{}
	for _, c := range f.stages {
		if c.spec.Kind != stagekind.SDK {
			continue
		}
		bound := f.flowBound(c)
		for _, p := range f.producers(c) {
			if cur, ok := limits[p]; p.spec.TimedCheckpoints && (!ok || bound < cur) {
				limits[p] = bound
			}
		}
	}
	return limits
}

// markSideFeeders marks every stage upstream of a side input: holding one
// could keep a side input from completing while the stage over its bound
// waits for it. Stages are in topological order, so one pass from the end
// sees each stage's readers before it.
func (f *flow) markSideFeeders() {
	needed := map[string]bool{} // PCollections a side input depends on
	for i := len(f.stages) - 1; i >= 0; i-- {
		st := f.stages[i]
		for _, pc := range st.spec.SideInputs {
			needed[pc] = true
		}
		for _, o := range st.spec.Outputs {
			st.fc.feedsSide = st.fc.feedsSide || needed[o]
		}
		if st.fc.feedsSide {
			for _, pc := range append(append([]string{}, st.spec.Inputs...), st.spec.SideInputs...) {
				needed[pc] = true
			}
		}
	}
}
