package execute

import (
	"bytes"
	"context"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/coder"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/metrics"
)

// progressEvery is how often running bundles are asked for their metrics.
const progressEvery = 5 // ticks of the driver's 200ms ticker

type progressDone struct {
	rec   *inflight
	infos []*pipepb.MonitoringInfo
}

// requestProgress asks each running bundle for its metrics so far.
func (d *driver) requestProgress(ctx context.Context) {
	for _, rec := range d.inflight {
		inst := rec.instruction()
		if inst == "" {
			continue
		}
		go func() {
			infos, err := rec.ss.harness.Progress(ctx, inst)
			if err != nil {
				return // the bundle may just have finished
			}
			select {
			case d.progress <- progressDone{rec: rec, infos: infos}:
			case <-ctx.Done():
			}
		}()
	}
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

// noteWork tells the engine how much more work a bundle reported since its
// last report.
func (d *driver) noteWork(rec *inflight, infos []*pipepb.MonitoringInfo) {
	n := elementCount(infos)
	if more := n - rec.workSeen; more > 0 {
		d.eng.NoteWork(rec.b.Stage, more)
		rec.workSeen = n
	}
}
