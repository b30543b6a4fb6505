package execute

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/beam-runner/beam-runner/runner/jobs"
	"github.com/beam-runner/beam-runner/runner/plan"
	"github.com/beam-runner/beam-runner/runner/savepoint"
)

// savepointReq asks a job's driver for a savepoint (jobs.Savepointer).
type savepointReq struct {
	stop  bool
	write func(jobs.Taken) error
	reply chan error // buffered: the driver never waits on it
}

// Savepoint implements jobs.Savepointer: the job's driver takes a
// checkpoint between two commits, as its periodic ones, and calls write
// with it there; with stop, once write succeeded, the driver commits
// nothing more and waits for the job's cancellation.
func (e *Executor) Savepoint(ctx context.Context, jobID string, stop bool, write func(jobs.Taken) error) error {
	e.mu.Lock()
	r := e.runs[jobID]
	e.mu.Unlock()
	if r == nil {
		return fmt.Errorf("job %q is not running", jobID)
	}
	req := savepointReq{stop: stop, write: write, reply: make(chan error, 1)}
	select {
	case r.savepoints <- req:
	case <-r.ended:
		return fmt.Errorf("job %q ended before its savepoint was taken", jobID)
	case <-ctx.Done():
		return fmt.Errorf("job %q: no savepoint taken: %w", jobID, ctx.Err())
	}
	return <-req.reply // the driver replies to a request it took
}

// onSavepoint takes the savepoint req asks for, at a consistent point
// (see checkpoint); the write runs here, on the driver goroutine, so
// that a stopping job commits nothing after it. A savepoint is a rare
// operator's act: the pause is worth its simplicity.
func (d *driver) onSavepoint(req savepointReq) error {
	d.advance()
	snap, err := d.eng.SnapshotRequeuingFlight()
	var data []byte
	if err == nil {
		c := checkpoint{engine: snap, state: d.r.state.Snapshot(), metrics: d.r.metrics.Results(), scaling: d.scaleSnapshot()}
		data, err = c.encode()
	}
	if err == nil {
		d.seq++
		err = req.write(jobs.Taken{Checkpoint: data, Sequence: d.seq, Shape: planShape(d.r.plan)})
	}
	req.reply <- err
	if err != nil || !req.stop {
		return nil
	}
	d.r.log.Info("job stopped at its savepoint; it ends when cancelled")
	<-d.jobCtx.Done()
	return d.jobCtx.Err()
}

// CheckRestore implements jobs.Savepointer: the checkpoint in a
// savepoint restores only into the same fused plan (stages, their
// transforms, materialised PCollections and their coders), since the
// engine's state is kept by stage and PCollection id.
func (e *Executor) CheckRestore(m *savepoint.Manifest, prepared any) error {
	pl, ok := prepared.(*plan.Plan)
	if !ok {
		return fmt.Errorf("the executor has no plan of the pipeline to check")
	}
	return shapeDiff(m.Shape, planShape(pl))
}

// planShape describes what of plan pl a checkpoint's state is kept by:
// its stages and the PCollections the runner holds between them (a
// PCollection inside a fused stage holds nothing, and its coder may
// change).
func planShape(pl *plan.Plan) []string {
	var out []string
	held := map[string]bool{}
	for _, s := range pl.Stages {
		out = append(out, fmt.Sprintf("stage %s (kind %d): %s", s.ID, s.Kind, strings.Join(s.Transforms, ", ")))
		for _, pc := range slices.Concat(s.Inputs, s.Outputs, s.CopyInputs) {
			held[pc] = true
		}
		for _, si := range s.SideInputs {
			held[si.PColl] = true
		}
		for _, fs := range s.FlattenSinks {
			held[fs.To] = true
		}
	}
	for _, id := range slices.Sorted(maps.Keys(held)) {
		out = append(out, fmt.Sprintf("pcollection %s: %s", id, savepoint.CoderSpec(pl.Components, pl.Wire[id])))
	}
	return out
}

// shapeDiff refuses a new plan whose shape differs from the savepoint's,
// naming the first difference. Pure.
func shapeDiff(old, now []string) error {
	const why = "this beam-runner restores a savepoint only into a pipeline that fuses into the same stages and PCollections with the same coders (a step's code may change; adding, removing or rewiring steps may not yet)"
	for i := range max(len(old), len(now)) {
		switch {
		case i >= len(old):
			return fmt.Errorf("the new pipeline has %q, which the savepoint's has not: %s", now[i], why)
		case i >= len(now):
			return fmt.Errorf("the savepoint's pipeline has %q, which the new one has not: %s", old[i], why)
		case old[i] != now[i]:
			return fmt.Errorf("the savepoint's pipeline has %q where the new one has %q: %s", old[i], now[i], why)
		}
	}
	return nil
}
