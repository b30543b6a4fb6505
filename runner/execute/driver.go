package execute

import (
	"context"
	"fmt"
	"github.com/beam-runner/beam-runner/runner/spec"
	"time"

	"github.com/beam-runner/beam-runner/runner/engine"
	"github.com/beam-runner/beam-runner/runner/jobs"
	"github.com/beam-runner/beam-runner/runner/userstate"
)

// driver is one drive of a job's engine: the engine, its SDK stages, a
// record per bundle in flight, and the channels the bundles' goroutines
// report on. Only the driver goroutine (runStages) uses it.
type driver struct {
	r      *run
	eng    *engine.Engine
	ckpt   checkpointPolicy
	stages map[string]*sdkStage
	// virtual: under TestStream, processing time moves only with the
	// stream's events.
	virtual  bool
	inflight map[int]*inflight // by engine bundle id
	done     chan bundleDone
	// results are the handlers of commands (commands.go), pending of
	// which have not reported yet.
	results chan func() error
	pending int
	// restarting is closed when the last restart started ends; gates are,
	// per environment, the restart its new bundles wait for.
	restarting chan struct{}
	gates      map[string]chan struct{}
	// saving is closed when the last checkpoint write started ends.
	saving chan struct{}
	// seq counts the checkpoints and savepoints taken.
	seq uint64
	// jobCtx is the job's context, which the drive's end does not cancel.
	jobCtx   context.Context
	splits   chan splitDone
	progress chan progressDone
	drainCh  <-chan struct{} // nil once the drain began
	ticks    int
	stable   map[string]bool           // stable-input stages, filled on first use (stable.go)
	dropped  map[string]engine.Dropped // GroupByKeys' drops last counted (dropped.go)
	dropLogs map[string]dropLog        // and last logged
	// last is the engine's Ready the driver read last, acknowledged by
	// the next advance.
	last  engine.Ready
	rates *stageRates // per-stage rate windows (rates.go)
	scale *scaler     // the autoscaling loop (autoscaling.go); nil: off
}

func (r *run) newDriver(eng *engine.Engine, ckpt checkpointPolicy, stages map[string]*sdkStage) *driver {
	dropped := eng.Dropped() // a restored job's drops are in its metrics
	return &driver{
		r: r, eng: eng, ckpt: ckpt, stages: stages, virtual: spec.HasTestStream(r.plan),
		inflight: map[int]*inflight{}, done: make(chan bundleDone), splits: make(chan splitDone),
		results: make(chan func() error), gates: map[string]chan struct{}{},
		progress: make(chan progressDone), drainCh: r.drain.ch,
		dropped: dropped, dropLogs: restoredDropLogs(dropped), rates: newStageRates(r.opts.RateWindow, eng.FlowControlled()),
	}
}

// syncClock feeds the engine the wall clock as processing time, except
// under TestStream, whose events alone move it.
func (d *driver) syncClock() {
	if !d.virtual {
		d.eng.AdvanceProcessingTime(time.Now().UnixMilli())
	}
}

// advance acknowledges the Ready the driver read last and has the engine
// decide from the events fed since (engine.Advance): before each Ready,
// and before a checkpoint, so a snapshot holds nothing the driver has
// carried out already.
func (d *driver) advance() {
	d.eng.Advance(d.last)
	d.last = engine.Ready{}
	d.noteDropped()
	if flowProbe != nil {
		flowProbe(d.eng.Pressure())
	}
}

// flowProbe, when a test sets it, sees the engine's flow control state
// after each Advance, in the driver's goroutine.
var flowProbe func(map[string]engine.PressureStats)

// handle feeds the engine the wall clock, has it decide, and carries out
// its decisions in the order engine.Ready documents, returning them for
// the wait.
func (d *driver) handle(ctx context.Context) (engine.Ready, error) {
	d.syncClock()
	d.advance()
	rd := d.eng.Ready()
	d.last = rd
	if rd.Err != nil {
		return rd, rd.Err
	}
	d.dropExpiredState(rd.Expired)
	saved := d.checkpointStableInput(ctx, rd.Bundles)
	for _, b := range rd.Bundles {
		if err := d.start(ctx, b, saved); err != nil {
			return rd, err
		}
	}
	d.requestSplits(ctx, rd.Splits)
	return rd, nil
}

// start runs a bundle on its own goroutine, which reports on d.done. It
// runs once saved (a checkpoint its input needs first; nil if none) is
// written and any restart of its environment's worker has ended.
func (d *driver) start(ctx context.Context, b engine.Bundle, saved <-chan struct{}) error {
	ss := d.stages[b.Stage]
	if err := d.r.ensureSideHandler(ss, d.eng); err != nil {
		d.eng.Fail(b.ID)
		return err
	}
	var txn *userstate.Txn
	if ss.stage.Stateful {
		txn = d.r.state.Begin(d.r.orderedLists)
	}
	rec := newInflight(b, ss)
	d.inflight[b.ID] = rec
	d.r.concurrency.start(b.Stage)
	d.r.liveStarted(rec)
	go d.r.runBundle(ctx, rec, txn, []<-chan struct{}{saved, d.gates[ss.stage.Env]}, d.done)
	return nil
}

// waitFor returns a channel that fires when processing time next matters,
// or an error when nothing can ever happen again.
func (d *driver) waitFor(rd engine.Ready) (<-chan time.Time, error) {
	if rd.Wake && !d.virtual {
		return time.After(time.Until(time.UnixMilli(rd.WakeAt))), nil
	}
	if len(d.inflight) == 0 && d.pending == 0 {
		return nil, fmt.Errorf("pipeline cannot make progress: no work is ready and nothing is running, but not every watermark reached the end of time")
	}
	return nil, nil
}

// onDone commits a finished bundle, or has it retried or the job failed,
// and checkpoints when one is due. The clock moves first: the engine
// stamps the bundle's output with its arrival time, which processing-time
// triggers measure from, and its residuals' delays start then.
func (d *driver) onDone(ctx context.Context, bd bundleDone) error {
	d.syncClock()
	rec := d.inflight[bd.b.ID]
	delete(d.inflight, bd.b.ID)
	if bd.err == nil {
		d.noteWork(rec, bd.res.Monitoring)
		d.noteRates(rec, bd.res.Monitoring, true)
		d.parkBacklog(rec, len(bd.res.Residuals))
	}
	d.r.concurrency.end(bd.b.Stage)
	d.r.liveFinished(rec, bd)
	if bd.err != nil {
		return d.onFailed(ctx, rec.ss, bd)
	}
	if err := d.r.commit(d.eng, rec.ss, bd); err != nil {
		return err
	}
	if bd.res.NeedsFinalize {
		d.finalize(rec.ss, bd.res.Instruction)
	}
	d.publishMetrics()
	if now := time.Now(); d.ckpt.due(now) {
		d.checkpointNow(ctx, now, jobs.TriggerInterval)
	}
	return nil
}

// onSplit hands a split's result to the engine. Results reach the driver
// before their bundle's end (inflight.finished), so the record is there.
func (d *driver) onSplit(sd splitDone) error {
	if d.inflight[sd.rec.b.ID] != sd.rec {
		return nil
	}
	if err := d.applySplit(sd); err != nil {
		return err
	}
	d.r.liveSplit(sd.rec.b, sd)
	return nil
}

// onProgress notes a running bundle's metrics so far; a report of an
// attempt that has ended since is dropped.
func (d *driver) onProgress(p progressDone) {
	if d.inflight[p.rec.b.ID] != p.rec {
		return
	}
	d.noteWork(p.rec, p.infos)
	d.noteRates(p.rec, p.infos, false)
	p.rec.metrics = p.infos
	d.publishMetrics()
}

// onTick feeds the engine the time and the bundles' output so far, asks
// for progress every progressEvery ticks, and lets the engine decide
// splits, which its next Ready hands out.
func (d *driver) onTick(ctx context.Context) {
	d.syncClock()
	d.r.liveSample(d.eng)
	for id, rec := range d.inflight {
		d.eng.NoteOutput(id, rec.outBytes.Load())
	}
	if d.ticks++; d.ticks%progressEvery == 0 {
		d.requestProgress(ctx)
		d.publishRates()
	}
	d.autoscale(time.Now())
	d.prepareCheckpoint(time.Now())
	d.eng.Tick()
}

// flowTickEvery is how often a flow-controlled job looks at its running
// bundles' output between ticks, so that a source pouring out a backlog
// is checkpointed at about its consumers' bound (engine.FlowTick).
const flowTickEvery = 25 * time.Millisecond

// onFlowTick feeds the engine the running bundles' output so far and
// lets flow control ask for source checkpoints.
func (d *driver) onFlowTick() {
	if len(d.inflight) == 0 {
		return
	}
	d.syncClock()
	for id, rec := range d.inflight {
		d.eng.NoteOutput(id, rec.outBytes.Load())
	}
	d.eng.FlowTick()
}

// onDrain starts the drain: the engine's next Ready checkpoints the
// running splittable bundles.
func (d *driver) onDrain() {
	d.drainCh = nil
	d.r.log.Info("draining: checkpointing running splittable bundles")
	d.eng.Drain()
}

// abandonGrace is how long a failed drive lets its running bundles end on
// their own before it cancels them. The Fn API cannot cancel a bundle, so
// cancelling means stopping its worker mid-bundle, where the SDK's harness
// logs errors of its own (and Go's races on its data stream).
const abandonGrace = time.Second

// abandon cancels the bundles still running and the pending commands,
// after a grace for them to end, and waits until each has reported: none
// outlives the drive.
func (d *driver) abandon(cancel context.CancelFunc) {
	if n := len(d.inflight); n > 0 {
		// Says why stopping a failed job takes up to the grace.
		d.r.log.Info("letting running bundles end", "bundles", n, "grace", abandonGrace)
	}
	d.settle(time.After(abandonGrace))
	cancel()
	d.settle(nil)
}

// settle discards what running bundles and pending commands report until
// none is left or stop fires (nil: never). Splits and progress are drained
// too, since a bundle ends only once its split requests have reported.
func (d *driver) settle(stop <-chan time.Time) {
	for len(d.inflight) > 0 || d.pending > 0 {
		select {
		case bd := <-d.done:
			delete(d.inflight, bd.b.ID)
		case <-d.results:
			d.pending--
		case <-d.splits:
		case <-d.progress:
		case <-stop:
			return
		}
	}
}

// dropExpiredState garbage-collects the user state of windows the engine
// says have expired.
func (d *driver) dropExpiredState(expired []engine.StateWindow) {
	for _, w := range expired {
		for _, s := range d.r.plan.Stages {
			if s.ID == w.Stage && s.Stateful {
				d.r.state.DropWindow(s.Transforms[0], w.Key, w.Window)
			}
		}
	}
}

// runStages drives the engine: it starts the bundles the engine says are
// ready, commits what they produce, and feeds it processing time, until
// every watermark reaches the end of time.
func (r *run) runStages(ctx context.Context) error {
	eng, ckpt, err := r.newEngine(time.Now())
	if err != nil {
		return err
	}
	defer r.liveEnd(eng)
	stages, err := r.prepareSDKStages(ctx)
	if err != nil {
		return err
	}
	r.tl.mark("register")
	d := r.newDriver(eng, ckpt, stages)
	d.scale = d.newScaler(time.Now())
	return d.run(ctx)
}

// run is the driver's event loop. Each event (a bundle's or a command's
// result, a split, progress, a tick, a drain) is handled by one of its on*
// methods, none of which waits on I/O; the engine is asked for its
// decisions after every one.
func (d *driver) run(ctx context.Context) error {
	d.jobCtx = ctx
	defer d.logUnloggedDrops()
	defer d.publishRates() // a finished job shows its last window's rates
	ctx, cancel := context.WithCancel(ctx)
	defer d.abandon(cancel)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var flowTick <-chan time.Time // flow control's checkpoints of sources
	if d.eng.FlowControlled() {
		ft := time.NewTicker(flowTickEvery)
		defer ft.Stop()
		flowTick = ft.C
	}
	for {
		rd, err := d.handle(ctx)
		if err != nil || (rd.Done && d.pending == 0) {
			return err
		}
		wait, err := d.waitFor(rd)
		if err != nil {
			return err
		}
		select {
		case bd := <-d.done:
			err = d.onDone(ctx, bd)
		case h := <-d.results:
			err = d.onResult(h)
		case sd := <-d.splits:
			err = d.onSplit(sd)
		case p := <-d.progress:
			d.onProgress(p)
		case <-tick.C:
			d.onTick(ctx)
		case <-flowTick:
			d.onFlowTick()
		case <-d.drainCh:
			d.onDrain()
		case req := <-d.r.savepoints:
			err = d.onSavepoint(req)
		case <-wait:
		case <-ctx.Done():
			return ctx.Err()
		}
		if err != nil {
			return err
		}
	}
}
