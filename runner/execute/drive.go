package execute

import (
	"context"
	"fmt"
	"github.com/beam-runner/beam-runner/runner/bundleio"
	"github.com/beam-runner/beam-runner/runner/spec"
	"github.com/beam-runner/beam-runner/runner/workers"
	"time"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/harness"
	"github.com/beam-runner/beam-runner/runner/engine"
	"github.com/beam-runner/beam-runner/runner/engine/userstate"
	"github.com/beam-runner/beam-runner/runner/plan"
)

// sdkStage is what the driver needs to run bundles of one SDK stage.
type sdkStage struct {
	stage   *plan.Stage
	harness *workers.Set
	desc    string
	io      plan.StageIO
	sinks   []string
	side    *bundleio.Sides // built on the first bundle: sides are complete then
	// sideTokens let the SDK cache the side inputs across bundles.
	sideTokens []*fnpb.ProcessBundleRequest_CacheToken
	input      bundleio.Codec
	// bounded: every output is a bounded PCollection, so a splittable
	// stage's restrictions are bounded (see splitFraction).
	bounded bool

	// The truncation descriptor of a splittable stage, used while draining.
	truncDesc, truncSink string
	truncIO              plan.StageIO
	// merge is, for the merge stage of a lifted combine's combiner tree,
	// its GroupByKey's stage id, under which its bundles are reported.
	merge string
}

// frameBytes is the largest data-plane frame the runner cuts input into.
const frameBytes = 1 << 20

type bundleDone struct {
	b   engine.Bundle
	res harness.Result
	txn *userstate.Txn
	err error
}

// runStages drives the engine: it starts the bundles the engine says are
// ready, commits what they produce, and feeds it processing time, until
// every watermark reaches the end of time. Each event is handled by one
// of the driver's on* methods (driver.go); the engine is asked for its
// decisions after every one.
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
	ctx, cancel := context.WithCancel(ctx)
	defer d.abandon(cancel)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		rd, err := d.handle(ctx)
		if err != nil || rd.Done {
			return err
		}
		wait, err := d.waitFor(rd)
		if err != nil {
			return err
		}
		select {
		case bd := <-d.done:
			err = d.onDone(ctx, bd)
		case sd := <-d.splits:
			err = d.onSplit(sd)
		case p := <-d.progress:
			d.onProgress(p)
		case <-tick.C:
			d.onTick(ctx)
		case <-d.drainCh:
			d.onDrain()
		case <-wait:
		case <-ctx.Done():
			return ctx.Err()
		}
		if err != nil {
			return err
		}
	}
}

// prepareSDKStages builds every SDK stage's descriptor, and the merge
// stages of lifted combines' combiner trees, then registers them all with
// each harness in one request.
func (r *run) prepareSDKStages(ctx context.Context) (map[string]*sdkStage, error) {
	out, err := r.buildSDKStages()
	if err != nil {
		return nil, err
	}
	if err := r.pool.RegisterAdded(ctx); err != nil {
		return nil, err
	}
	return out, nil
}

// buildSDKStages builds the descriptors of prepareSDKStages and adds each
// to its environment's harnesses, unregistered.
func (r *run) buildSDKStages() (map[string]*sdkStage, error) {
	stages, err := spec.SDKStages(r.plan, r.opts.CombineMergeBytes)
	if err != nil {
		return nil, err
	}
	out := map[string]*sdkStage{}
	for _, s := range stages {
		ss, err := r.buildSDKStage(s.Stage)
		if err != nil {
			return nil, err
		}
		ss.merge = s.MergeOf
		out[s.Stage.ID] = ss
	}
	return out, nil
}

// buildSDKStage builds one SDK stage's descriptor (and its truncation's,
// for a splittable stage) and adds them to its harnesses, unregistered.
func (r *run) buildSDKStage(s *plan.Stage) (*sdkStage, error) {
	h := r.pool.Harnesses(s.Env)
	if h == nil {
		return nil, fmt.Errorf("stage %s: no harness for environment %q", s.ID, s.Env)
	}
	desc, io, err := r.plan.Descriptor(s, r.pool.Endpoint())
	if err != nil {
		return nil, err
	}
	r.pool.AddDescriptor(s.Env, desc)
	in, err := bundleio.CodecOf(r.plan, s.Inputs[0])
	if err != nil {
		return nil, err
	}
	ss := &sdkStage{stage: s, harness: h, desc: desc.GetId(), io: io, input: in, bounded: r.allBounded(s.Outputs)}
	if s.Truncate != "" {
		td, tio, err := r.plan.TruncateDescriptor(s, r.pool.Endpoint())
		if err != nil {
			return nil, err
		}
		r.pool.AddDescriptor(s.Env, td)
		ss.truncDesc, ss.truncIO = td.GetId(), tio
		for sink := range tio.Sinks {
			ss.truncSink = sink
		}
	}
	for sink := range io.Sinks {
		ss.sinks = append(ss.sinks, sink)
	}
	return ss, nil
}

func (r *run) runBundle(ctx context.Context, rec *inflight, txn *userstate.Txn, done chan<- bundleDone) {
	b, ss := rec.b, rec.ss
	input, err := ss.input.Frames(b.Input, frameBytes)
	if err == nil && r.drain.isSet() && ss.truncDesc != "" {
		input, err = r.truncate(ctx, ss, input)
	}
	if err != nil {
		done <- bundleDone{b: b, err: fmt.Errorf("stage %s: preparing input: %w", ss.stage.ID, err)}
		return
	}
	hb := harness.Bundle{
		Descriptor: ss.desc, InputTransform: ss.io.Source, Input: input,
		Outputs: ss.sinks, State: bundleio.State(ss.side, txn, r.hot()), CacheTokens: ss.sideTokens,
		Started:     rec.started,
		OutputBytes: &rec.outBytes,
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
	res, err := ss.harness.ProcessAvoiding(ctx, hb, b.Avoid)
	// Split results for this bundle reach the driver before its completion.
	rec.finished()
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
			c, err := r.sinkCodecs.Of(pc)
			if err != nil {
				return err
			}
			out[pc] = append(out[pc], c.Chunks(frames)...)
		}
	}
	timers := map[engine.TimerStream][][]byte{}
	for ts, frames := range d.res.Timers {
		timers[engine.TimerStream(ts)] = append(timers[engine.TimerStream(ts)], bundleio.Join(frames))
	}
	if d.txn != nil {
		r.state.Commit(d.txn)
	}
	infos := d.res.Monitoring
	if ss.merge != "" {
		// A combiner tree's partial merges are the runner's work, not
		// elements of the pipeline's PCollections; user metrics count.
		infos = withoutPCollectionMetrics(infos)
	}
	r.metrics.AddBundle(infos)
	if err := eng.Commit(d.b.ID, engine.Result{Data: out, Timers: timers, Residuals: residuals(d.res)}); err != nil {
		return err
	}
	if d.res.NeedsFinalize {
		// Outputs are committed: the SDK may now acknowledge its source.
		// Done before the job can end, so callbacks are never lost.
		if err := ss.harness.Finalize(ctx, d.res.Instruction); err != nil {
			r.log.Warn("bundle finalization failed", "err", err)
		}
	}
	return nil
}

// withoutPCollectionMetrics drops the metrics of PCollections (element
// counts, sampled sizes) from a bundle's.
func withoutPCollectionMetrics(infos []*pipepb.MonitoringInfo) []*pipepb.MonitoringInfo {
	var out []*pipepb.MonitoringInfo
	for _, mi := range infos {
		if _, ok := mi.GetLabels()["PCOLLECTION"]; !ok {
			out = append(out, mi)
		}
	}
	return out
}

// ensureSideHandler builds a stage's side-input handler on its first
// bundle, when the engine guarantees its side inputs are complete.
func (r *run) ensureSideHandler(ss *sdkStage, eng *engine.Engine) error {
	if ss.side != nil || len(ss.stage.SideInputs) == 0 {
		return nil
	}
	side, tokens, err := bundleio.NewSides(r.plan, ss.stage.SideInputs, eng.SideData)
	if err != nil {
		return err
	}
	ss.side, ss.sideTokens = side, tokens
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

// allBounded reports whether every one of the PCollections is bounded.
func (r *run) allBounded(pcs []string) bool {
	for _, pc := range pcs {
		if r.plan.Components.GetPcollections()[pc].GetIsBounded() != pipepb.IsBounded_BOUNDED {
			return false
		}
	}
	return true
}
