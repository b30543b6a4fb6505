package execute

import (
	"bytes"
	"context"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/coder"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/engine"
	"github.com/beam-runner/beam-runner/runner/metrics"
)

// progressEvery is how often running bundles are asked for their metrics.
const progressEvery = 5 // ticks of the driver's 200ms ticker

type progressDone struct {
	id    int
	infos []*pipepb.MonitoringInfo
}

// requestProgress asks each running bundle for its metrics so far.
func (r *run) requestProgress(ctx context.Context, stages map[string]*sdkStage, running map[int]*engine.Bundle, out chan<- progressDone) {
	for id, b := range running {
		inst := r.split.inst(id)
		if inst == "" {
			continue
		}
		h := stages[b.Stage].harness
		go func() {
			infos, err := h.Progress(ctx, inst)
			if err != nil {
				return // the bundle may just have finished
			}
			select {
			case out <- progressDone{id: id, infos: infos}:
			case <-ctx.Done():
			}
		}()
	}
}

// publishMetrics sets the job's metrics to the committed bundles' metrics
// plus the latest progress of those still running.
func (r *run) publishMetrics(inflight map[int][]*pipepb.MonitoringInfo) {
	if len(inflight) == 0 {
		r.job.SetMetrics(r.metrics.Results())
		return
	}
	view := metrics.NewStore()
	view.AddBundle(r.metrics.Results())
	for _, infos := range inflight {
		view.AddBundle(infos)
	}
	r.job.SetMetrics(view.Results())
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
func noteWork(eng *engine.Engine, b *engine.Bundle, seen map[int]int64, infos []*pipepb.MonitoringInfo) {
	n := elementCount(infos)
	if d := n - seen[b.ID]; d > 0 {
		eng.NoteWork(b.Stage, d)
		seen[b.ID] = n
	}
}
