package execute

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/harness"
	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/runner/engine"
	"github.com/beam-runner/beam-runner/runner/engine/userstate"
	"github.com/beam-runner/beam-runner/runner/plan"
	"github.com/beam-runner/beam-runner/runner/stagekind"
)

// sdkStage is what the driver needs to run bundles of one SDK stage.
type sdkStage struct {
	stage   *plan.Stage
	harness *workerSet
	desc    string
	io      plan.StageIO
	sinks   []string
	side    *sideHandler // built on the first bundle: sides are complete then
	// sideTokens let the SDK cache the side inputs across bundles.
	sideTokens []*fnpb.ProcessBundleRequest_CacheToken
	input      *coders.WindowedValueCodec
	// bounded: every output is a bounded PCollection, so a splittable
	// stage's restrictions are bounded (see splitFraction).
	bounded bool

	// The truncation descriptor of a splittable stage, used while draining.
	truncDesc, truncSink string
	truncIO              plan.StageIO
}

// frameBytes is the largest data-plane frame the runner cuts input into.
const frameBytes = 1 << 20

type bundleDone struct {
	b   *engine.Bundle
	res harness.Result
	txn *userstate.Txn
	err error
}

// runStages drives the engine: it starts the bundles the engine says are
// ready, commits what they produce, and feeds it processing time, until
// every watermark reaches the end of time.
func (r *run) runStages(ctx context.Context) error {
	// Under TestStream, processing time is virtual: it starts at the wall
	// clock (DoFns set processing-time timers from time.Now) and moves
	// only with the stream's events.
	virtual := r.hasTestStream()
	eng, ckpt, err := r.newEngine(time.Now())
	if err != nil {
		return err
	}
	defer r.liveEnd(eng)
	stages, err := r.prepareSDKStages(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan bundleDone)
	splits := make(chan splitDone)
	running := map[int]*engine.Bundle{}
	outBytes := map[int]*atomic.Int64{} // output received so far, per running bundle
	workSeen := map[int]int64{}         // element counts reported so far, per running bundle
	defer func() {
		cancel()
		for ; len(running) > 0; delete(running, (<-done).b.ID) {
		}
	}()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	ticks := 0
	progress := make(chan progressDone)
	inflightMetrics := map[int][]*pipepb.MonitoringInfo{}
	drainCh := r.split.drainCh
	for {
		if !virtual {
			eng.AdvanceProcessingTime(time.Now().UnixMilli())
		}
		for _, b := range eng.Ready() {
			ss := stages[b.Stage]
			if err := r.ensureSideHandler(ss, eng); err != nil {
				eng.Fail(b.ID)
				return err
			}
			var txn *userstate.Txn
			if ss.stage.Stateful {
				txn = r.state.Begin(r.orderedListCodec)
			}
			running[b.ID] = b
			outBytes[b.ID] = new(atomic.Int64)
			r.concurrency.start(b.Stage)
			r.liveStarted(b)
			go r.runBundle(ctx, ss, b, txn, outBytes[b.ID], done)
		}
		if err := eng.Err(); err != nil {
			return err
		}
		if eng.Done() {
			return nil
		}
		wait, err := r.waitFor(eng, len(running), virtual)
		if err != nil {
			return err
		}
		select {
		case d := <-done:
			delete(running, d.b.ID)
			delete(outBytes, d.b.ID)
			if d.err == nil {
				noteWork(eng, d.b, workSeen, d.res.Monitoring)
			}
			delete(workSeen, d.b.ID)
			delete(inflightMetrics, d.b.ID)
			r.concurrency.end(d.b.Stage)
			r.liveFinished(stages[d.b.Stage], d)
			if d.err != nil {
				if err := r.bundleFailed(ctx, eng, stages[d.b.Stage], d); err != nil {
					return err
				}
				continue
			}
			if err := r.commit(ctx, eng, stages[d.b.Stage], d); err != nil {
				return err
			}
			r.publishMetrics(inflightMetrics)
			if now := time.Now(); ckpt.due(now) {
				ckpt.taken(now)
				r.checkpoint(eng)
			}
		case sd := <-splits:
			if b := running[sd.id]; b != nil {
				if err := r.applySplit(eng, stages[b.Stage], sd); err != nil {
					return err
				}
				r.liveSplit(b, sd)
			}
		case p := <-progress:
			if b := running[p.id]; b != nil {
				noteWork(eng, b, workSeen, p.infos)
				inflightMetrics[p.id] = p.infos
				r.publishMetrics(inflightMetrics)
			}
		case <-tick.C:
			if !virtual {
				eng.AdvanceProcessingTime(time.Now().UnixMilli())
			}
			r.liveSample(eng)
			for id, n := range outBytes {
				eng.NoteOutput(id, n.Load())
			}
			if ticks++; ticks%progressEvery == 0 {
				r.requestProgress(ctx, stages, running, progress)
			}
			r.requestSplits(ctx, eng.SplitRequests(), stages, running, splits)
		case <-drainCh:
			drainCh = nil
			r.log.Info("draining: checkpointing running splittable bundles")
			r.requestSplits(ctx, eng.Drain(), stages, running, splits)
		case <-wait:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// waitFor returns a channel that fires when processing time next matters,
// or an error when nothing can ever happen again.
func (r *run) waitFor(eng *engine.Engine, inflight int, virtual bool) (<-chan time.Time, error) {
	at, ok := eng.NextWakeup()
	if ok && !virtual {
		return time.After(time.Until(time.UnixMilli(at))), nil
	}
	if inflight == 0 {
		return nil, fmt.Errorf("pipeline cannot make progress: no work is ready and nothing is running, but not every watermark reached the end of time")
	}
	return nil, nil
}

func (r *run) hasTestStream() bool {
	for _, s := range r.plan.Stages {
		if s.Kind == stagekind.TestStream {
			return true
		}
	}
	return false
}

// prepareSDKStages builds and registers every SDK stage's descriptor.
func (r *run) prepareSDKStages(ctx context.Context) (map[string]*sdkStage, error) {
	out := map[string]*sdkStage{}
	for _, s := range r.plan.Stages {
		if s.Kind != stagekind.SDK {
			continue
		}
		h := r.pool.harnesses[s.Env]
		if h == nil {
			return nil, fmt.Errorf("stage %s: no harness for environment %q", s.ID, s.Env)
		}
		desc, io, err := r.plan.Descriptor(s, r.srv.Endpoint())
		if err != nil {
			return nil, err
		}
		r.srv.AddDescriptor(desc)
		if err := h.Register(ctx, desc); err != nil {
			return nil, err
		}
		in, err := wireCodec(r.plan, s.Inputs[0])
		if err != nil {
			return nil, err
		}
		ss := &sdkStage{stage: s, harness: h, desc: desc.GetId(), io: io, input: in, bounded: r.allBounded(s.Outputs)}
		if s.Truncate != "" {
			td, tio, err := r.plan.TruncateDescriptor(s, r.srv.Endpoint())
			if err != nil {
				return nil, err
			}
			r.srv.AddDescriptor(td)
			if err := h.Register(ctx, td); err != nil {
				return nil, err
			}
			ss.truncDesc, ss.truncIO = td.GetId(), tio
			for sink := range tio.Sinks {
				ss.truncSink = sink
			}
		}
		for sink := range io.Sinks {
			ss.sinks = append(ss.sinks, sink)
		}
		out[s.ID] = ss
	}
	return out, nil
}

func (r *run) runBundle(ctx context.Context, ss *sdkStage, b *engine.Bundle, txn *userstate.Txn, outBytes *atomic.Int64, done chan<- bundleDone) {
	input, err := coders.Frames(b.Input, ss.input, frameBytes)
	if err == nil && r.split.draining.Load() && ss.truncDesc != "" {
		input, err = r.truncate(ctx, ss, input)
	}
	if err != nil {
		done <- bundleDone{b: b, err: fmt.Errorf("stage %s: preparing input: %w", ss.stage.ID, err)}
		return
	}
	hb := harness.Bundle{
		Descriptor: ss.desc, InputTransform: ss.io.Source, Input: input,
		Outputs: ss.sinks, State: r.withHot(bundleState(ss.side, txn)), CacheTokens: ss.sideTokens,
		Started:     func(inst string) { r.split.started(b.ID, inst) },
		OutputBytes: outBytes,
	}
	for _, tf := range ss.stage.Timers {
		ts := harness.TimerStream{Transform: tf.Transform, Family: tf.Family}
		hb.TimerStreams = append(hb.TimerStreams, ts)
		if data := b.Timers[engine.TimerStream(ts)]; len(data) > 0 {
			if hb.Timers == nil {
				hb.Timers = map[harness.TimerStream][]byte{}
			}
			hb.Timers[ts] = data
		}
	}
	res, err := ss.harness.Process(ctx, hb)
	// Split results for this bundle reach the driver before its completion.
	r.split.finished(b.ID)
	if err != nil {
		err = fmt.Errorf("stage %s (%s): %w", ss.stage.ID, r.stageName(ss.stage), err)
	}
	done <- bundleDone{b: b, res: res, txn: txn, err: err}
}

// commit hands a bundle's outputs to the engine and merges its metrics.
func (r *run) commit(ctx context.Context, eng *engine.Engine, ss *sdkStage, d bundleDone) error {
	out := map[string][][]byte{}
	for sink, frames := range d.res.Outputs {
		if pc, ok := ss.io.Sinks[sink]; ok {
			out[pc] = append(out[pc], join(frames))
		}
	}
	timers := map[engine.TimerStream][][]byte{}
	for ts, frames := range d.res.Timers {
		timers[engine.TimerStream(ts)] = append(timers[engine.TimerStream(ts)], join(frames))
	}
	if d.txn != nil {
		r.state.Commit(d.txn)
	}
	r.metrics.AddBundle(d.res.Monitoring)
	if err := eng.Commit(d.b.ID, engine.Result{Data: out, Timers: timers, Residuals: residuals(d.res)}); err != nil {
		return err
	}
	r.dropExpiredState(eng)
	if d.res.NeedsFinalize {
		// Outputs are committed: the SDK may now acknowledge its source.
		// Done before the job can end, so callbacks are never lost.
		if err := ss.harness.Finalize(ctx, d.res.Instruction); err != nil {
			r.log.Warn("bundle finalization failed", "err", err)
		}
	}
	return nil
}

// join concatenates a stream's frames: elements may span frames. It drops
// each frame from the slice once copied, so a large output is held about
// once, not twice, while it is joined.
func join(frames [][]byte) []byte {
	if len(frames) == 1 {
		return frames[0]
	}
	n := 0
	for _, f := range frames {
		n += len(f)
	}
	b := make([]byte, 0, n)
	for i, f := range frames {
		b = append(b, f...)
		frames[i] = nil
	}
	return b
}

// ensureSideHandler builds a stage's side-input handler on its first
// bundle, when the engine guarantees its side inputs are complete.
func (r *run) ensureSideHandler(ss *sdkStage, eng *engine.Engine) error {
	if ss.side != nil || len(ss.stage.SideInputs) == 0 {
		return nil
	}
	build := map[sideRef]func() (*coders.SideIndex, error){}
	for _, si := range ss.stage.SideInputs {
		wv, err := wireCodec(r.plan, si.PColl)
		if err != nil {
			return err
		}
		var key *coders.Codec
		switch si.URN {
		case coders.SideMultimap:
			if key = wv.Elem.Component(0); key == nil {
				return fmt.Errorf("multimap side input %q of %q is not KV-coded", si.Tag, si.Transform)
			}
		case coders.SideIterable:
		default:
			return fmt.Errorf("side input %q of %q: access pattern %q is not supported", si.Tag, si.Transform, si.URN)
		}
		data := eng.SideData(si.PColl)
		build[sideRef{Transform: si.Transform, SideInput: si.Tag}] = func() (*coders.SideIndex, error) {
			return coders.IndexSide(data.Chunks, wv, key)
		}
	}
	tokens, err := sideCacheTokens(ss.stage.SideInputs)
	if err != nil {
		return err
	}
	ss.side, ss.sideTokens = newSideHandler(build), tokens
	return nil
}

// residuals converts the SDK's self-checkpoints into engine residuals,
// holding the watermark at the SDK's output watermark estimate.
func residuals(res harness.Result) []engine.Residual {
	var out []engine.Residual
	for _, r := range res.Residuals {
		app := r.GetApplication()
		er := engine.Residual{Element: app.GetElement(), Delay: r.GetRequestedTimeDelay().AsDuration().Milliseconds()}
		for _, ow := range app.GetOutputWatermarks() {
			ms := ow.AsTime().UnixMilli()
			if er.Hold == 0 || ms < er.Hold {
				er.Hold = ms
			}
		}
		out = append(out, er)
	}
	return out
}

// dropExpiredState garbage-collects the user state of windows the engine
// says have expired.
func (r *run) dropExpiredState(eng *engine.Engine) {
	for _, w := range eng.TakeExpired() {
		for _, s := range r.plan.Stages {
			if s.ID == w.Stage && s.Stateful {
				r.state.DropWindow(s.Transforms[0], w.Key, w.Window)
			}
		}
	}
}

// allBounded reports whether every one of the PCollections is bounded.
func (r *run) allBounded(pcs []string) bool {
	for _, pc := range pcs {
		if r.plan.Components.GetPcollections()[pc].GetIsBounded() != pipepb.IsBounded_BOUNDED {
			return false
		}
	}
	return true
}
