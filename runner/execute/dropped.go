package execute

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/engine"
	"github.com/beam-runner/beam-runner/runner/metrics"
	"github.com/beam-runner/beam-runner/runner/plan"
)

// Elements a GroupByKey drops as late vanish from a job's results without
// an error, so the driver reports them where users look: counters in the
// job's metrics under the names Beam's Java runners give them, and a
// warning in the job's log and messages (at most every dropLogEvery).
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
			Urn: metrics.UrnSumInt64, Payload: binary.AppendUvarint(nil, uint64(n)), // the store sets the type
			Labels: map[string]string{"PTRANSFORM": transform, "NAMESPACE": droppedNamespace, "NAME": name},
		})
	}
	return out
}

// dropLogEvery is how often at most a stage's drops are logged: a stream
// with steady late data would otherwise log on every commit. The counters
// are exact whenever they are read.
const dropLogEvery = 30 * time.Second

// dropLog is what was last logged of a stage's drops, and when.
type dropLog struct {
	at     time.Time
	totals engine.Dropped
}

// restoredDropLogs counts a restored job's drops as logged (its last run
// logged them) but not recently, so the next new drop is logged at once.
func restoredDropLogs(totals map[string]engine.Dropped) map[string]dropLog {
	logs := map[string]dropLog{}
	for id, t := range totals {
		logs[id] = dropLog{totals: t}
	}
	return logs
}

// dropLogDue reports whether a stage's new drops are logged at now, last
// logged at last (zero: never).
func dropLogDue(last, now time.Time) bool {
	return last.IsZero() || now.Sub(last) >= dropLogEvery
}

// noteDropped counts what GroupByKeys dropped since it last looked, and
// logs it when due. It runs after the engine decides (advance), so a
// checkpoint's metrics hold the drops its engine snapshot counts.
func (d *driver) noteDropped() {
	now := d.eng.Dropped()
	delta := droppedSince(d.dropped, now)
	d.dropped = now
	for _, id := range slices.Sorted(maps.Keys(delta)) {
		if st := d.gbkStage(id); st != nil {
			d.r.metrics.AddBundle(droppedCounters(st.Transforms[0], delta[id]))
		}
		if dropLogDue(d.dropLogs[id].at, time.Now()) {
			d.logDrops(id)
		}
	}
	if len(delta) > 0 {
		d.publishMetrics()
	}
}

// logUnloggedDrops logs, as the drive ends, the drops not logged yet.
func (d *driver) logUnloggedDrops() {
	for _, id := range slices.Sorted(maps.Keys(d.dropped)) {
		if d.dropped[id] != d.dropLogs[id].totals {
			d.logDrops(id)
		}
	}
}

// logDrops warns of what stage id dropped since its last warning.
func (d *driver) logDrops(id string) {
	st, total, last := d.gbkStage(id), d.dropped[id], d.dropLogs[id].totals
	if st == nil {
		return
	}
	name, late, closed := d.r.stageName(st), total.Late-last.Late, total.Closed-last.Closed
	d.r.log.Warn("GroupByKey dropped elements of expired or closed windows",
		"stage", id, "transform", name, "late", late, "closed", closed,
		"late_total", total.Late, "closed_total", total.Closed)
	d.r.job.Message(jobpb.JobMessage_JOB_MESSAGE_WARNING, fmt.Sprintf(
		"%s (stage %s) dropped %d elements of windows already expired and %d of windows whose trigger had finished (%d and %d in all)",
		name, id, late, closed, total.Late, total.Closed))
	d.dropLogs[id] = dropLog{at: time.Now(), totals: total}
}

// gbkStage is the plan's stage id, if it has a transform to name.
func (d *driver) gbkStage(id string) *plan.Stage {
	i := slices.IndexFunc(d.r.plan.Stages, func(s *plan.Stage) bool { return s.ID == id })
	if i < 0 || len(d.r.plan.Stages[i].Transforms) == 0 {
		return nil
	}
	return d.r.plan.Stages[i]
}
