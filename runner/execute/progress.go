package execute

import (
	"bytes"
	"context"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/coder"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/metrics"
)

// progressEvery is how often running bundles are asked for their metrics;
// those of a stage whose concurrency probe is measuring are asked every
// tick, so each bundle's rate is measured over short, recent intervals.
const progressEvery = 5 // ticks of the driver's 200ms ticker

type progressDone struct {
	rec   *inflight
	infos []*pipepb.MonitoringInfo
	at    int64 // wall time (ms) the answer was heard
}

// requestProgress asks running bundles for their metrics so far: all of
// them if all is set, else only those of stages being probed.
func (d *driver) requestProgress(ctx context.Context, all bool) {
	for _, rec := range d.inflight {
		inst := rec.instruction()
		if inst == "" || !(all || d.eng.Probing(rec.b.Stage)) || !rec.asking.CompareAndSwap(false, true) {
			continue
		}
		go func() {
			defer rec.asking.Store(false)
			infos, err := rec.ss.harness.Progress(ctx, inst)
			if err != nil {
				return // the bundle may just have finished
			}
			// Stamped on arrival, not when the driver gets to it: the
			// probe divides by the time between two reports.
			select {
			case d.progress <- progressDone{rec: rec, infos: infos, at: time.Now().UnixMilli()}:
			case <-ctx.Done():
			}
		}()
	}
}

// heardAt is the processing time of a report heard at wall time at: under
// TestStream only the stream moves the clock, so it is the engine's now.
func (d *driver) heardAt(at int64) int64 {
	if d.virtual {
		return d.eng.Now()
	}
	return at
}

// publishMetrics sets the job's metrics to the committed bundles' metrics
// plus the latest progress of those still running.
func (d *driver) publishMetrics() {
	var view *metrics.Store
	for _, rec := range d.inflight {
		if rec.metrics == nil {
			continue
		}
		if view == nil {
			view = metrics.NewStore()
			view.AddBundle(d.r.metrics.Results())
		}
		view.AddBundle(rec.metrics)
	}
	if view == nil {
		d.r.job.SetMetrics(d.r.metrics.Results())
		return
	}
	d.r.job.SetMetrics(view.Results())
}

// elementCount sums a bundle's element counts so far: the work measure
// that the engine's concurrency probe compares across concurrencies.
func elementCount(infos []*pipepb.MonitoringInfo) int64 {
	var n int64
	for _, mi := range infos {
		if mi.GetUrn() != metrics.UrnElementCount {
			continue
		}
		if v, err := coder.DecodeVarInt(bytes.NewReader(mi.GetPayload())); err == nil && v > 0 {
			n += v
		}
	}
	return n
}

// noteWork tells the engine a bundle's element count so far, heard at
// processing time at.
func (d *driver) noteWork(rec *inflight, infos []*pipepb.MonitoringInfo, at int64) {
	d.eng.NoteProgress(rec.b.ID, elementCount(infos), at)
}

type probeState struct {
	limit   int
	settled bool
}

// logProbes logs each change of a stage's concurrency probe: which
// concurrency a shared interpreter got decides much of a job's speed.
func (d *driver) logProbes() {
	for id := range d.stages {
		limit, settled, ok := d.eng.ProbeLimit(id)
		now := probeState{limit, settled}
		if !ok || d.probes[id] == now {
			continue
		}
		if d.probes == nil {
			d.probes = map[string]probeState{}
		}
		d.probes[id] = now
		d.r.log.Info("concurrency probe", "stage", id, "bundles", limit, "settled", settled)
	}
}
