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
// committed, processing time advanced, a tick), then calls Advance, with
// which the engine makes its decisions, and reads them, all in one Ready
// value (ready.go), as etcd's raft hands out its Ready: Ready only reads,
// and the next Advance acknowledges what it returned.
//
// Ordering contract: Ready hands out bundles whose outputs must be passed to
// Commit (or the bundle to Fail) before the engine considers their input
// processed; watermarks never pass an uncommitted bundle's input.
//
// Its parts: flow keeps the stages, PCollections, data and watermarks
// (flow.go); each stateful stage's keyed keeps its keys, timers and state
// windows (keyed.go); the Engine itself keeps the bundles: cutting them,
// those in flight, their retries and splits.
type Engine struct {
	flow   *flow
	nextID int
	flight map[int]*bundle
	// retries are in-flight bundles whose failed attempt is to run again.
	retries []*bundle
	// draining stops dynamic splits (splitpolicy.go).
	draining bool
	// splits are the split requests Tick and Drain decided, and out the
	// bundles Advance cut (in flight already), for Ready to hand out until
	// Advance acknowledges them.
	splits []SplitRequest
	out    []*bundle
	// inv is the invariant checks' memory (invariants.go), unused
	// without the invariants build tag.
	inv invariantState
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
	// Lane is 1 + the worker a stateful stage's bundle asks for, the lane
	// of its keys (lanes.go); 0 when any worker will do.
	Lane int
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
	// what it had sent at its last memory checkpoint, outAtTimed at its
	// last checkpoint by time (streamCheckpoints).
	out, outAtCkpt, outAtTimed int64
	// combine marks a GroupByKey's combine bundle (combtree.go), of its
	// combiner tree's combine combineID, of combineGroups partial groups.
	combine                  bool
	combineID, combineGroups int
	// userCauses are the causes of its user failures so far (Retry).
	userCauses []string
	// held are residual restrictions its checkpoints gave up, filed when
	// it commits (ApplySplit); ckptAt is when a checkpoint was last asked
	// of it by time (streamCheckpoints), or when it started.
	held   []Residual
	ckptAt int64
	// flowAsked: flow control asked it to checkpoint while held;
	// outAtFlow is what it had sent at flow control's last checkpoint
	// (flowctl.go).
	flowAsked bool
	outAtFlow int64
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
	// waiting is input whose side input windows are not complete yet,
	// and sideWMs the side inputs' watermarks it was last sorted at
	// (sidegate.go).
	waiting []chunk
	sideWMs []int64
	fc      flowState // flow control (flowctl.go)
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
	e.flow.recompute()
	e.checkInvariants("New")
	return e, e.flow.err
}

// build makes an engine's structure for spec, before any watermark moves.
func build(spec Spec) (*Engine, error) {
	f := &flow{spec: spec, pcolls: map[string]*pcoll{}, now: spec.StartTime, pend: newPendingSpill(spec)}
	e := &Engine{flow: f, flight: map[int]*bundle{}}
	for id, ps := range spec.PColls {
		e.flow.pcolls[id] = &pcoll{id: id, spec: ps, wm: coders.MinTimestamp}
	}
	for i := range spec.Stages {
		st, err := e.flow.newStage(spec.Stages[i])
		if err != nil {
			return nil, err
		}
		e.flow.stages = append(e.flow.stages, st)
	}
	if e.flow.spec.MaxBundles <= 0 {
		e.flow.spec.MaxBundles = 1
	}
	e.flow.markSideFeeders()
	return e, e.flow.linkWindowMergeStages()
}

func (f *flow) newStage(ss StageSpec) (*stage, error) {
	st := &stage{spec: ss, outWM: coders.MinTimestamp, inWM: coders.MinTimestamp, flight: map[int]*bundle{}, events: ss.Events,
		fc: flowState{windowAt: f.now}}
	if ss.ProbeBundles {
		st.probe = newProbe(f.maxBundles(st))
	}
	for _, pc := range append(append([]string{}, ss.Inputs...), ss.SideInputs...) {
		if f.pcolls[pc] == nil {
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
		f.addConsumer(ss.Inputs[0], st)
		if p := f.pcolls[ss.Outputs[0]]; len(ss.Outputs) == 1 && p != nil {
			p.fromGBK = st
		}
	case stagekind.SDK:
		f.addConsumer(ss.Inputs[0], st)
		if ss.Keyed {
			st.keyed = newKeyed(keyedConfig{stage: ss.ID, in: f.pcolls[ss.Inputs[0]].spec, timers: ss.Timers,
				timeSorted: ss.TimeSorted, lateness: ss.AllowedLateness, lanes: ss.Lanes})
		}
	case stagekind.Flatten:
		for _, in := range ss.CopyInputs {
			f.addConsumer(in, st)
		}
	}
	for _, side := range ss.SideInputs {
		p := f.pcolls[side]
		p.sides = append(p.sides, st)
		if p.data == nil {
			p.data = &Data{}
		}
	}
	return st, nil
}

func (f *flow) addConsumer(pc string, st *stage) {
	p := f.pcolls[pc]
	p.consumers = append(p.consumers, st)
}

// Watermark returns a PCollection's current watermark.
func (e *Engine) Watermark(pc string) int64 {
	if p := e.flow.pcolls[pc]; p != nil {
		return p.wm
	}
	return coders.MinTimestamp
}

// SideData returns a side input's data so far: complete, or complete for
// the windows the stages reading it take elements of (sidegate.go). The
// copy is the driver's: what arrives later does not change it.
func (e *Engine) SideData(pc string) *Data {
	if p := e.flow.pcolls[pc]; p != nil && p.data != nil {
		return &Data{Chunks: slices.Clip(p.data.Chunks), Bytes: p.data.Bytes}
	}
	return &Data{}
}

// done reports whether every watermark reached the end of time and no
// bundle is in flight.
func (f *flow) done() bool {
	for _, st := range f.stages {
		if st.outWM < coders.MaxTimestamp || len(st.flight) > 0 {
			return false
		}
	}
	return true
}

// maxBundles is how many bundles of st may be in flight at once: the
// engine's bound, or less while the stage's probe allows less.
func (f *flow) maxBundles(st *stage) int {
	n := f.spec.MaxBundles
	if m := st.spec.MaxBundles; m > 0 && m < n {
		n = m
	}
	if st.probe != nil && st.probe.limit < n {
		n = st.probe.limit
	}
	return n
}

// CapBundles sets how many bundles of stage id may run at once, for a
// stage with a cap of its own (a bundle per worker: Python processes, pool
// workers), as autoscaling changes its workers: more bundles than workers
// would share a worker and contend for it, and their busy time would
// read as need. Never above the engine's bound; false if the stage has no
// cap of its own (or is unknown).
func (e *Engine) CapBundles(id string, n int) bool {
	st := e.flow.stage(id)
	if st == nil || st.spec.MaxBundles <= 0 || n < 1 {
		return false
	}
	st.spec.MaxBundles = n
	return true
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
	// watermark estimate) when Held; else the element's timestamp holds
	// it. A flag, not zero for unset: an estimate may be the epoch.
	Hold int64
	Held bool
}

// Commit records a bundle's result and releases its input and keys.
func (e *Engine) Commit(id int, res Result) error {
	defer e.checkInvariants("Commit")
	outputs, timers := res.Data, res.Timers
	b := e.flight[id]
	if b == nil {
		return fmt.Errorf("commit of unknown bundle %d", id)
	}
	delete(e.flight, id)
	st := e.flow.stage(b.Stage)
	delete(st.flight, id)
	e.flow.pend.release(b)
	if b.combine {
		if err := e.flow.commitCombine(st, b, res); err != nil {
			e.flow.fail(err)
		}
		e.flow.recompute()
		return e.flow.err
	}
	e.flow.noteConsumed(st, b)
	if st.keyed != nil {
		st.keyed.release(b.Keys)
		if err := st.keyed.setTimers(timers); err != nil {
			e.flow.fail(fmt.Errorf("stage %s: %w", st.spec.ID, err))
			return e.flow.err
		}
	}
	for _, pc := range slices.Sorted(maps.Keys(outputs)) {
		for _, c := range outputs[pc] {
			e.flow.deliver(pc, c)
		}
	}
	if err := e.flow.deferResiduals(st, append(res.Residuals, b.held...)); err != nil {
		e.flow.fail(err)
	}
	e.flow.recompute()
	return e.flow.err
}

// Fail forgets a failed bundle; the job is expected to fail with it.
func (e *Engine) Fail(id int) {
	if b := e.flight[id]; b != nil {
		delete(e.flight, id)
		delete(e.flow.stage(b.Stage).flight, id)
		e.flow.pend.release(b)
		e.inv.failed = true
	}
	e.checkInvariants("Fail")
}

// AdvanceProcessingTime moves processing time forward to now.
func (e *Engine) AdvanceProcessingTime(now int64) {
	e.flow.advanceTime(now)
	e.checkInvariants("AdvanceProcessingTime")
}

// advanceTime moves processing time forward to now: probes measure by it,
// processing-time triggers fire, and watermarks follow.
func (f *flow) advanceTime(now int64) {
	if now <= f.now {
		return
	}
	f.flowTime(now)
	f.now = now
	f.tickProbes()
	for _, st := range f.stages {
		if st.gbk != nil {
			st.gbk.AdvanceProcessingTime(now)
			f.emitPanes(st)
		}
	}
	f.recompute()
}

// nextWakeup is the earliest processing time after now at which something
// could become due; ok is false when nothing waits on processing time.
// What is due already but could not run (its key or its stage busy, its
// side inputs incomplete) waits for a bundle's end, not for time: were it
// reported, the driver would wake at once, again and again, until then.
func (f *flow) nextWakeup() (at int64, ok bool) {
	consider := func(t int64) {
		if t > f.now && (!ok || t < at) {
			at, ok = t, true
		}
	}
	if f.spillHeld() {
		consider(f.now + spillPollMs)
	}
	for _, st := range f.stages {
		if st.keyed != nil {
			if t, has := st.keyed.nextTimerWakeup(f.now); has {
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
func (f *flow) stage(id string) *stage {
	for _, st := range f.stages {
		if st.spec.ID == id || (st.spec.TreeStage != "" && st.spec.TreeStage == id) {
			return st
		}
	}
	return nil
}

func (f *flow) fail(err error) {
	if f.err == nil {
		f.err = err
	}
}

// Dropped is what a GroupByKey stage has dropped since the job began:
// elements of windows already expired (Late) and of windows whose trigger
// had finished (Closed). The counts are in the engine's snapshot.
type Dropped struct{ Late, Closed int64 }

// Dropped reports, by stage ID, each GroupByKey stage that dropped any
// element.
func (e *Engine) Dropped() map[string]Dropped {
	out := map[string]Dropped{}
	for _, st := range e.flow.stages {
		if st.gbk == nil {
			continue
		}
		if d := (Dropped{Late: st.gbk.DroppedLate(), Closed: st.gbk.DroppedClosed()}); d != (Dropped{}) {
			out[st.spec.ID] = d
		}
	}
	return out
}
