package engine

import (
	"fmt"
	"maps"
	"slices"

	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/runner/engine/agg"
	"github.com/beam-runner/beam-runner/runner/stagekind"
)

// Engine decides what runs next. It is a single-threaded state machine
// that does no I/O and reads no clock: the driver feeds it events (a bundle
// committed, processing time advanced, a tick) and after each event asks
// it for its decisions, all in one Ready value (ready.go), as etcd's raft
// hands out its Ready.
//
// Ordering contract: Ready hands out bundles whose outputs must be passed to
// Commit (or the bundle to Fail) before the engine considers their input
// processed; watermarks never pass an uncommitted bundle's input.
type Engine struct {
	spec   Spec
	stages []*stage
	pcolls map[string]*pcoll
	now    int64 // processing time
	nextID int
	flight map[int]*bundle
	err    error
	// expired are stateful windows whose state may be dropped.
	expired []StateWindow
	// retries are in-flight bundles whose failed attempt is to run again.
	retries []*bundle
	// draining stops dynamic splits (splitpolicy.go).
	draining bool
	// splits are the split requests Tick and Drain decided, for the next
	// Ready to hand out.
	splits []SplitRequest
	// pend bounds pending input in memory; nil without a limit.
	pend *pendingSpill
}

// Bundle is work for an SDK harness, handed to the driver as a value:
// the engine never changes the slices and map it shares with the driver
// once it handed them out.
type Bundle struct {
	ID    int
	Stage string
	Input [][]byte // encoded windowed values of the stage's main input
	// Keys are the encoded keys a stateful stage's bundle owns.
	Keys []string
	// Timers are the encoded timers to deliver, per timer family.
	Timers map[TimerStream][]byte
	// Attempt counts the runs of this bundle, from 1 (see Retry).
	Attempt int
	// Avoid names the workers where the bundle's user code failed: the
	// driver runs it on another worker when one is up (see Retry).
	Avoid []string
}

// bundle is the engine's record of a bundle in flight: what it handed out
// and what it keeps to itself.
type bundle struct {
	Bundle
	minTS int64
	// started and splitAt are processing times, for the split policy.
	started, splitAt int64
	split            splitBook
	mem              int // bytes of the pending budget its input holds
	// out is what the bundle has sent back so far (NoteOutput); outAtCkpt
	// what it had sent at its last memory checkpoint.
	out, outAtCkpt int64
	// combine marks a GroupByKey's combine bundle (combtree.go), of its
	// combiner tree's combine combineID, of combineGroups partial groups.
	combine                  bool
	combineID, combineGroups int
	// userCauses are the causes of its user failures so far (Retry).
	userCauses []string
}

type pcoll struct {
	id             string
	spec           PCollSpec
	wm             int64
	consumers      []*stage // stages reading its data (main or copy inputs)
	sides          []*stage // stages reading it as a side input
	data           *Data    // kept only while side consumers need it
	windowMergeFor *stage   // the GBK whose window-merge answers this PCollection carries
	fromGBK        *stage   // the GBK writing it, if one does
}

type stage struct {
	spec     StageSpec
	probe    *probe // picks the stage's concurrency (probe.go); nil: fixed
	outWM    int64
	inWM     int64
	pending  []chunk
	flight   map[int]*bundle
	gbk      *agg.GBK
	events   []Event // TestStream events not yet applied
	emitted  bool    // Impulse
	keyed    *keyed  // stateful stages
	delayed  []delayed
	combines []agg.Combine // a GroupByKey's combines waiting to start
}

type chunk struct {
	data  []byte
	minTS int64
	// mem is what the chunk counts in the pending budget (pendspill.go);
	// spillKey and size locate a chunk whose data was spilled (data nil).
	mem      int
	spillKey []byte
	size     int
}

// New builds an engine; the error names a stage whose configuration is
// unusable.
func New(spec Spec) (*Engine, error) {
	e, err := build(spec)
	if err != nil {
		return nil, err
	}
	e.recompute()
	return e, e.err
}

// build makes an engine's structure for spec, before any watermark moves.
func build(spec Spec) (*Engine, error) {
	e := &Engine{spec: spec, pcolls: map[string]*pcoll{}, flight: map[int]*bundle{}, now: spec.StartTime, pend: newPendingSpill(spec)}
	for id, ps := range spec.PColls {
		e.pcolls[id] = &pcoll{id: id, spec: ps, wm: coders.MinTimestamp}
	}
	for i := range spec.Stages {
		st, err := e.newStage(spec.Stages[i])
		if err != nil {
			return nil, err
		}
		e.stages = append(e.stages, st)
	}
	if e.spec.MaxBundles <= 0 {
		e.spec.MaxBundles = 1
	}
	return e, e.linkWindowMergeStages()
}

func (e *Engine) newStage(ss StageSpec) (*stage, error) {
	st := &stage{spec: ss, outWM: coders.MinTimestamp, inWM: coders.MinTimestamp, flight: map[int]*bundle{}, events: ss.Events}
	if ss.ProbeBundles {
		st.probe = newProbe(e.maxBundles(st))
	}
	for _, pc := range append(append([]string{}, ss.Inputs...), ss.SideInputs...) {
		if e.pcolls[pc] == nil {
			return nil, fmt.Errorf("stage %s reads unknown PCollection %q", ss.ID, pc)
		}
	}
	if ss.TreeStage != "" && (ss.Kind != stagekind.GBK || ss.Agg.Combine == nil) {
		return nil, fmt.Errorf("stage %s: tree stage %q given to a stage that is not a GroupByKey with a combiner tree", ss.ID, ss.TreeStage)
	}
	switch ss.Kind {
	case stagekind.GBK:
		g, err := agg.New(ss.Agg)
		if err != nil {
			return nil, fmt.Errorf("stage %s: %w", ss.ID, err)
		}
		st.gbk = g
		e.addConsumer(ss.Inputs[0], st)
		if p := e.pcolls[ss.Outputs[0]]; len(ss.Outputs) == 1 && p != nil {
			p.fromGBK = st
		}
	case stagekind.SDK:
		e.addConsumer(ss.Inputs[0], st)
		if ss.Keyed {
			st.keyed = newKeyed(keyedConfig{stage: ss.ID, in: e.pcolls[ss.Inputs[0]].spec, timers: ss.Timers,
				timeSorted: ss.TimeSorted, lateness: ss.AllowedLateness})
		}
	case stagekind.Flatten:
		for _, in := range ss.CopyInputs {
			e.addConsumer(in, st)
		}
	}
	for _, side := range ss.SideInputs {
		p := e.pcolls[side]
		p.sides = append(p.sides, st)
		if p.data == nil {
			p.data = &Data{}
		}
	}
	return st, nil
}

func (e *Engine) addConsumer(pc string, st *stage) {
	p := e.pcolls[pc]
	p.consumers = append(p.consumers, st)
}

// Watermark returns a PCollection's current watermark.
func (e *Engine) Watermark(pc string) int64 {
	if p := e.pcolls[pc]; p != nil {
		return p.wm
	}
	return coders.MinTimestamp
}

// SideData returns a complete side input's data. Valid while a stage that
// reads it still runs; the data is never modified once complete.
func (e *Engine) SideData(pc string) *Data {
	if p := e.pcolls[pc]; p != nil && p.data != nil {
		return p.data
	}
	return &Data{}
}

// done reports whether every watermark reached the end of time and no
// bundle is in flight.
func (e *Engine) done() bool {
	if len(e.flight) > 0 {
		return false
	}
	for _, st := range e.stages {
		if st.outWM < coders.MaxTimestamp {
			return false
		}
	}
	return true
}

// maxBundles is how many bundles of st may be in flight at once: the
// engine's bound, or less while the stage's probe allows less.
func (e *Engine) maxBundles(st *stage) int {
	n := e.spec.MaxBundles
	if m := st.spec.MaxBundles; m > 0 && m < n {
		n = m
	}
	if st.probe != nil && st.probe.limit < n {
		n = st.probe.limit
	}
	return n
}

// Result is what a successful bundle produced.
type Result struct {
	// Data maps PCollection ids to chunks of whole encoded elements.
	Data map[string][][]byte
	// Timers are the timers the bundle set or cleared, per family.
	Timers map[TimerStream][][]byte
	// Residuals are input the bundle did not finish (self-checkpoints),
	// to run again later.
	Residuals []Residual
}

// Residual is unfinished input of a bundle.
type Residual struct {
	Element []byte // one encoded windowed value of the stage's main input
	Delay   int64  // milliseconds of processing time to wait first
	// Hold is the watermark the residual holds its stage's output at (its
	// watermark estimate); zero means the element's timestamp.
	Hold int64
}

// Commit records a bundle's result and releases its input and keys.
func (e *Engine) Commit(id int, res Result) error {
	outputs, timers := res.Data, res.Timers
	b := e.flight[id]
	if b == nil {
		return fmt.Errorf("commit of unknown bundle %d", id)
	}
	delete(e.flight, id)
	st := e.stage(b.Stage)
	delete(st.flight, id)
	e.pend.release(b)
	if b.combine {
		if err := e.commitCombine(st, b, res); err != nil {
			e.fail(err)
		}
		e.recompute()
		return e.err
	}
	if st.keyed != nil {
		st.keyed.release(b.Keys)
		if err := st.keyed.setTimers(timers); err != nil {
			e.fail(fmt.Errorf("stage %s: %w", st.spec.ID, err))
			return e.err
		}
	}
	for _, pc := range slices.Sorted(maps.Keys(outputs)) {
		for _, c := range outputs[pc] {
			e.deliver(pc, c)
		}
	}
	if err := e.deferResiduals(st, res.Residuals); err != nil {
		e.fail(err)
	}
	e.recompute()
	return e.err
}

// Fail forgets a failed bundle; the job is expected to fail with it.
func (e *Engine) Fail(id int) {
	if b := e.flight[id]; b != nil {
		delete(e.flight, id)
		delete(e.stage(b.Stage).flight, id)
		e.pend.release(b)
	}
}

// AdvanceProcessingTime moves processing time forward to now.
func (e *Engine) AdvanceProcessingTime(now int64) {
	if now <= e.now {
		return
	}
	e.now = now
	e.tickProbes()
	for _, st := range e.stages {
		if st.gbk != nil {
			st.gbk.AdvanceProcessingTime(now)
			e.emitPanes(st)
		}
	}
	e.recompute()
}

// nextWakeup is the earliest processing time after now at which something
// could become due; ok is false when nothing waits on processing time.
// What is due already but could not run (its key or its stage busy, its
// side inputs incomplete) waits for a bundle's end, not for time: were it
// reported, the driver would wake at once, again and again, until then.
func (e *Engine) nextWakeup() (at int64, ok bool) {
	consider := func(t int64) {
		if t > e.now && (!ok || t < at) {
			at, ok = t, true
		}
	}
	for _, st := range e.stages {
		if st.keyed != nil {
			if t, has := st.keyed.nextTimerWakeup(e.now); has {
				consider(t)
			}
		}
		for _, d := range st.delayed {
			consider(d.readyAt)
		}
		if st.gbk == nil {
			continue
		}
		if t, has := st.gbk.NextProcessingTimeWakeup(); has {
			consider(t)
		}
	}
	return at, ok
}

// stage finds a stage by id; a GroupByKey's tree stage id finds the
// GroupByKey, which owns its combine bundles.
func (e *Engine) stage(id string) *stage {
	for _, st := range e.stages {
		if st.spec.ID == id || (st.spec.TreeStage != "" && st.spec.TreeStage == id) {
			return st
		}
	}
	return nil
}

func (e *Engine) fail(err error) {
	if e.err == nil {
		e.err = err
	}
}
