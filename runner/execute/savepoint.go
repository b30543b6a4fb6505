package execute

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/engine"
	"github.com/beam-runner/beam-runner/runner/jobs"
	"github.com/beam-runner/beam-runner/runner/plan"
	"github.com/beam-runner/beam-runner/runner/savepoint"
	"github.com/beam-runner/beam-runner/runner/spec"
	"github.com/beam-runner/beam-runner/runner/stagekind"
	"github.com/beam-runner/beam-runner/runner/userstate"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
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

// Restore implements jobs.Savepointer: the checkpoint in a savepoint
// must be one this executor reads, and its state is remapped onto the
// new pipeline's plan (remap.go): a pipeline that fuses into the same
// stages takes it as it is; another takes what the two share by name,
// its plan keeping as stage boundaries the PCollections that hold saved
// input. What would be lost or misread is refused, naming the step.
func (e *Executor) Restore(sp *savepoint.Savepoint, p *pipepb.Pipeline, opts *structpb.Struct, o jobs.RestoreOptions) (jobs.Restored, error) {
	c, err := decodeCheckpoint(sp.Checkpoint)
	if err != nil {
		return jobs.Restored{}, fmt.Errorf("its %s: %w", savepoint.CheckpointFile, err)
	}
	oldPl, err := spec.PlanStarting(sp.Pipeline, sp.Manifest.StartStage)
	if err != nil {
		return jobs.Restored{}, fmt.Errorf("its %s does not plan: %w", savepoint.PipelineFile, err)
	}
	newPl, err := spec.PlanStarting(p, nil)
	if err != nil {
		return jobs.Restored{}, err
	}
	if len(o.Mapping) == 0 && len(sp.Manifest.StartStage) == 0 &&
		shapeDiff(shapeOf(sp.Manifest.Shape, sp.Manifest.Transforms), shapeOf(planShape(newPl), planNames(newPl))) == nil {
		return jobs.Restored{Checkpoint: sp.Checkpoint, Prepared: newPl}, nil // the same plan: as it is
	}
	rc, err := remapCheckpoint(c, oldPl, p, opts, o)
	if err != nil {
		return jobs.Restored{}, err
	}
	data, err := rc.ckpt.encode()
	return jobs.Restored{Checkpoint: data, Prepared: rc.plan, StartStage: rc.starts}, err
}

// remapped is a checkpoint remapped onto a new pipeline's plan.
type remapped struct {
	ckpt   checkpoint
	plan   *plan.Plan
	starts []string
}

// remapCheckpoint moves checkpoint c of a job of plan oldPl onto
// pipeline p's plan. Pure.
func remapCheckpoint(c checkpoint, oldPl *plan.Plan, p *pipepb.Pipeline, opts *structpb.Struct, o jobs.RestoreOptions) (remapped, error) {
	cfg := spec.Config{Options: opts}
	oldSpec, err := spec.Build(oldPl, cfg)
	if err != nil {
		return remapped{}, fmt.Errorf("the savepoint's pipeline: %w", err)
	}
	held, err := engine.SnapshotHeld(oldSpec, c.engine)
	if err != nil {
		return remapped{}, fmt.Errorf("its %s: %w", savepoint.CheckpointFile, err)
	}
	newPl, err := spec.PlanStarting(p, nil)
	if err != nil {
		return remapped{}, err
	}
	r := remapping{old: indexPlan(oldPl), now: indexPlan(newPl), m: o.Mapping, drop: o.AllowDropped}
	starts := startStage(r, held)
	if len(starts) > 0 {
		if newPl, err = spec.PlanStarting(p, starts); err != nil {
			return remapped{}, err
		}
		r.now = indexPlan(newPl)
	}
	h, err := rehoming(r, held)
	if err != nil {
		return remapped{}, err
	}
	newSpec, err := spec.Build(newPl, cfg)
	if err != nil {
		return remapped{}, err
	}
	if c.engine, err = engine.Rehome(oldSpec, c.engine, newSpec, h); err != nil {
		return remapped{}, err
	}
	if c.state, err = userstate.RenameTransforms(c.state, h.Transforms); err != nil {
		return remapped{}, err
	}
	c.metrics = renameMetrics(c.metrics, h.Transforms)
	return remapped{ckpt: c, plan: newPl, starts: starts}, nil
}

// renameMetrics keeps the committed metrics of transforms the new
// pipeline has, under their new ids, and those of no transform.
func renameMetrics(ms []*pipepb.MonitoringInfo, rename map[string]string) []*pipepb.MonitoringInfo {
	var out []*pipepb.MonitoringInfo
	for _, m := range ms {
		id, ok := m.GetLabels()[metricTransformLabel]
		if !ok {
			out = append(out, m)
			continue
		}
		to, ok := rename[id]
		if !ok {
			continue
		}
		m = proto.Clone(m).(*pipepb.MonitoringInfo)
		m.Labels[metricTransformLabel] = to
		out = append(out, m)
	}
	return out
}

// metricTransformLabel is the label naming a metric's transform.
const metricTransformLabel = "PTRANSFORM"

// planNames maps each transform of pl's pipeline, by id, to its unique
// name.
func planNames(pl *plan.Plan) map[string]string {
	out := map[string]string{}
	for id, t := range pl.Components.GetTransforms() {
		out[id] = t.GetUniqueName()
	}
	return out
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

// shape is a plan's shape (planShape) and the unique names of its
// transforms by id, which name them in a refusal.
type shape struct {
	lines []string
	names map[string]string
}

func shapeOf(lines []string, names map[string]string) shape { return shape{lines, names} }

// shapeDiff refuses a new plan whose shape differs from the savepoint's,
// naming the steps added and removed, or else the first difference
// (a rewiring) with the transforms of its stages. Pure.
func shapeDiff(old, now shape) error {
	const why = "this beam-runner restores a savepoint only into a pipeline that fuses into the same stages and PCollections with the same coders (a step's code may change; adding, removing or rewiring steps may not yet)"
	if len(old.names) == 0 || len(now.names) == 0 {
		old.names, now.names = nil, nil // a version 1 savepoint: ids on both sides
	}
	if added, removed := stepsDiff(old, now); len(added)+len(removed) > 0 {
		var what []string
		if len(added) > 0 {
			what = append(what, "adds "+strings.Join(added, ", "))
		}
		if len(removed) > 0 {
			what = append(what, "removes "+strings.Join(removed, ", "))
		}
		return fmt.Errorf("the new pipeline %s: %s", strings.Join(what, " and "), why)
	}
	for i := range max(len(old.lines), len(now.lines)) {
		switch {
		case i >= len(old.lines):
			return fmt.Errorf("the new pipeline has %s, which the savepoint's has not: %s", now.describe(i), why)
		case i >= len(now.lines):
			return fmt.Errorf("the savepoint's pipeline has %s, which the new one has not: %s", old.describe(i), why)
		case old.lines[i] != now.lines[i]:
			return fmt.Errorf("the savepoint's pipeline has %s where the new one has %s: %s", old.describe(i), now.describe(i), why)
		}
	}
	return nil
}

// stepsDiff lists, quoted and sorted, the transforms the stages of now
// have and old's have not, and the reverse.
func stepsDiff(old, now shape) (added, removed []string) {
	o, n := old.transforms(), now.transforms()
	for _, t := range slices.Sorted(maps.Keys(n)) {
		if !o[t] {
			added = append(added, t)
		}
	}
	for _, t := range slices.Sorted(maps.Keys(o)) {
		if !n[t] {
			removed = append(removed, t)
		}
	}
	return added, removed
}

// transforms is the set of s's stages' transforms, each as name does.
func (s shape) transforms() map[string]bool {
	out := map[string]bool{}
	for _, line := range s.lines {
		if _, ids, ok := strings.Cut(line, "): "); ok && strings.HasPrefix(line, "stage ") {
			for _, id := range strings.Split(ids, ", ") {
				out[s.name(id)] = true
			}
		}
	}
	return out
}

// name quotes transform id's unique name; a transform the runner made
// (an SDF's expansion, "e3/PairWithRestriction") is named after the one
// it came from, and one s has no name of keeps its id.
func (s shape) name(id string) string {
	base, rest, _ := strings.Cut(id, "/")
	if n, ok := s.names[id]; ok {
		return fmt.Sprintf("%q", n)
	} else if n, ok := s.names[base]; ok {
		return fmt.Sprintf("%q", n+"/"+rest)
	}
	return id
}

// describe quotes line i and, for a stage, names its transforms by
// unique name: ids differ between SDKs and say little to a user.
func (s shape) describe(i int) string {
	line := s.lines[i]
	_, ids, ok := strings.Cut(line, "): ")
	if !ok || !strings.HasPrefix(line, "stage ") || len(s.names) == 0 {
		return fmt.Sprintf("%q", line)
	}
	var names []string
	for _, id := range strings.Split(ids, ", ") {
		names = append(names, s.name(id))
	}
	return fmt.Sprintf("%q (transforms %s)", line, strings.Join(names, ", "))
}

// CheckUpdate implements jobs.Savepointer: before a running job stops,
// the remapping of what its stages may hold (all they can: input,
// keyed state, groups, source positions) onto p's plan must refuse
// nothing.
func (e *Executor) CheckUpdate(old *pipepb.Pipeline, oldStarts []string, p *pipepb.Pipeline, _ *structpb.Struct, o jobs.RestoreOptions) error {
	oldPl, err := spec.PlanStarting(old, oldStarts)
	if err != nil {
		return fmt.Errorf("the running job's pipeline: %w", err)
	}
	newPl, err := spec.PlanStarting(p, nil)
	if err != nil {
		return err
	}
	held := mayHold(oldPl)
	r := remapping{old: indexPlan(oldPl), now: indexPlan(newPl), m: o.Mapping, drop: o.AllowDropped}
	if starts := startStage(r, held); len(starts) > 0 {
		if newPl, err = spec.PlanStarting(p, starts); err != nil {
			return err
		}
		r.now = indexPlan(newPl)
	}
	_, err = rehoming(r, held)
	return err
}

// mayHold is all the stages of pl can hold at a savepoint.
func mayHold(pl *plan.Plan) engine.Held {
	h := engine.Held{Stages: map[string]engine.StageHeld{}, PColls: map[string]bool{}}
	for _, s := range pl.Stages {
		h.Stages[s.ID] = engine.StageHeld{Input: len(s.Inputs) > 0 && s.Kind == stagekind.SDK, Keyed: s.Stateful,
			Grouped: s.Kind == stagekind.GBK, Residuals: s.Truncate != ""}
		for _, si := range s.SideInputs {
			h.PColls[si.PColl] = true
		}
	}
	return h
}
