package execute

import (
	"encoding/binary"
	"maps"
	"slices"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/engine"
	"github.com/beam-runner/beam-runner/runner/metrics"
	"github.com/beam-runner/beam-runner/runner/plan"
)

// Elements a GroupByKey drops as late vanish from a job's results without
// an error, so the driver reports them where users look: a warning in the
// job's log each time a stage drops more, and counters in the job's
// metrics under the names Beam's Java runners give them.
const (
	droppedNamespace  = "org.apache.beam.runners.core.LateDataDroppingDoFnRunner"
	droppedLateName   = "droppedDueToLateness"
	droppedClosedName = "droppedDueToClosedWindow"
)

// droppedSince is what each stage dropped beyond prev.
func droppedSince(prev, now map[string]engine.Dropped) map[string]engine.Dropped {
	out := map[string]engine.Dropped{}
	for id, n := range now {
		p := prev[id]
		if d := (engine.Dropped{Late: n.Late - p.Late, Closed: n.Closed - p.Closed}); d.Late > 0 || d.Closed > 0 {
			out[id] = d
		}
	}
	return out
}

// droppedCounters are the counters of one stage's new drops, on its
// GroupByKey transform.
func droppedCounters(transform string, d engine.Dropped) []*pipepb.MonitoringInfo {
	var out []*pipepb.MonitoringInfo
	for name, n := range map[string]int64{droppedLateName: d.Late, droppedClosedName: d.Closed} {
		if n <= 0 {
			continue
		}
		out = append(out, &pipepb.MonitoringInfo{
			Urn: metrics.UrnSumInt64, Type: "beam:metrics:sum_int64:v1", Payload: binary.AppendUvarint(nil, uint64(n)),
			Labels: map[string]string{"PTRANSFORM": transform, "NAMESPACE": droppedNamespace, "NAME": name},
		})
	}
	return out
}

// noteDropped logs and counts what GroupByKeys dropped since it last
// looked. It runs after the engine decides (advance), so a checkpoint's
// metrics hold the drops its engine snapshot counts.
func (d *driver) noteDropped() {
	now := d.eng.Dropped()
	delta := droppedSince(d.dropped, now)
	d.dropped = now
	for _, id := range slices.Sorted(maps.Keys(delta)) {
		i := slices.IndexFunc(d.r.plan.Stages, func(s *plan.Stage) bool { return s.ID == id })
		if i < 0 || len(d.r.plan.Stages[i].Transforms) == 0 {
			continue
		}
		st := d.r.plan.Stages[i]
		n := delta[id]
		d.r.log.Warn("GroupByKey dropped elements of expired or closed windows",
			"stage", id, "transform", d.r.stageName(st), "late", n.Late, "closed", n.Closed,
			"late_total", now[id].Late, "closed_total", now[id].Closed)
		d.r.metrics.AddBundle(droppedCounters(st.Transforms[0], n))
	}
}
