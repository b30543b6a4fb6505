package execute

import (
	"context"
	"fmt"
	"time"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/harness"
	"github.com/beam-runner/beam-runner/runner/bundleio"
	"github.com/beam-runner/beam-runner/runner/engine"
	"github.com/beam-runner/beam-runner/runner/userstate"
	"github.com/beam-runner/beam-runner/runner/workers"
)

// frameBytes is the largest data-plane frame the runner cuts input into.
const frameBytes = 1 << 20

type bundleDone struct {
	b   engine.Bundle
	res harness.Result
	txn *userstate.Txn
	err error
}

// runBundle runs a bundle on its SDK stage's harnesses once its gates
// (a checkpoint it needs, a restart of its worker; nil for none) are
// closed, and reports the outcome on done.
func (r *run) runBundle(ctx context.Context, rec *inflight, txn *userstate.Txn, gates []<-chan struct{}, done chan<- bundleDone) {
	b, ss := rec.b, rec.ss
	for _, gate := range gates {
		if gate == nil {
			continue
		}
		select {
		case <-gate:
		case <-ctx.Done():
			done <- bundleDone{b: b, err: fmt.Errorf("stage %s: waiting to start: %w", ss.stage.ID, ctx.Err())}
			return
		}
	}
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
	res, err := ss.harness.ProcessPlaced(ctx, hb, workers.Placement{Avoid: b.Avoid, Lane: b.Lane})
	// Split results for this bundle reach the driver before its completion.
	rec.finished()
	if err != nil {
		err = fmt.Errorf("stage %s (%s): %w", ss.stage.ID, r.stageName(ss.stage), err)
	}
	done <- bundleDone{b: b, res: res, txn: txn, err: err}
}

// commit hands a bundle's outputs to the engine and merges its metrics.
func (r *run) commit(eng *engine.Engine, ss *sdkStage, d bundleDone) error {
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
	if ss.treeOf != "" {
		// A combiner tree's partial combines are the runner's work, not
		// elements of the pipeline's PCollections; user metrics count.
		infos = withoutPCollectionMetrics(infos)
	}
	r.metrics.AddBundle(infos)
	res := engine.Result{Data: out, Timers: timers, Residuals: residuals(d.res)}
	if err := eng.Commit(d.b.ID, res); err != nil {
		return err
	}
	r.logCommit(eng, ss, d.b, res)
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

// wallDelayMs is a residual's requested delay in the engine's whole
// milliseconds: rounded up, and one more when there is any, since the
// engine's clock is the wall clock truncated to the millisecond (up to one
// behind it), so a resume at its now plus the delay could come early.
func wallDelayMs(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return (d + time.Millisecond - 1).Milliseconds() + 1
}

// residuals converts the SDK's self-checkpoints into engine residuals,
// holding the watermark at the SDK's output watermark estimate.
func residuals(res harness.Result) []engine.Residual {
	var out []engine.Residual
	for _, r := range res.Residuals {
		app := r.GetApplication()
		er := engine.Residual{Element: app.GetElement(), Delay: wallDelayMs(r.GetRequestedTimeDelay().AsDuration())}
		for _, ow := range app.GetOutputWatermarks() {
			ms := ow.AsTime().UnixMilli()
			if !er.Held || ms < er.Hold {
				er.Hold, er.Held = ms, true
			}
		}
		out = append(out, er)
	}
	return out
}
