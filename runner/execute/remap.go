package execute

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/beam-runner/beam-runner/runner/engine"
	"github.com/beam-runner/beam-runner/runner/plan"
	"github.com/beam-runner/beam-runner/runner/savepoint"
	"github.com/beam-runner/beam-runner/runner/stagekind"
)

// A savepoint's checkpoint keeps its engine state by stage and
// PCollection id, its user state by transform id: ids of the plan it
// was taken of. remap decides where each goes in a new plan, matching
// what the two pipelines share by name: a stage by its first transform's
// unique name (through the mapping), a PCollection by its producer's
// unique name and output tag. All pure.

// planIndex names a plan's transforms and PCollections.
type planIndex struct {
	pl      *plan.Plan
	name    map[string]string        // transform id -> unique name
	byName  map[string]string        // unique name -> transform id
	pcIdent map[string]string        // pcoll id -> producer name + "\x00" + tag
	pcOf    map[string]string        // identity -> pcoll id
	first   map[string]*plan.Stage   // first transform's name -> stage
	readers map[string][]*plan.Stage // pcoll id -> stages whose main input it is
}

func indexPlan(pl *plan.Plan) planIndex {
	ix := planIndex{pl: pl, name: map[string]string{}, byName: map[string]string{}, pcIdent: map[string]string{},
		pcOf: map[string]string{}, first: map[string]*plan.Stage{}, readers: map[string][]*plan.Stage{}}
	for id, t := range pl.Components.GetTransforms() {
		ix.name[id] = t.GetUniqueName()
		if len(t.GetSubtransforms()) == 0 {
			ix.byName[t.GetUniqueName()] = id
		}
	}
	for _, s := range pl.Stages {
		ix.first[ix.name[s.Transforms[0]]] = s
		if s.Kind == stagekind.SDK && len(s.Inputs) > 0 {
			ix.readers[s.Inputs[0]] = append(ix.readers[s.Inputs[0]], s)
		}
		for _, id := range s.Transforms {
			outs := pl.Components.GetTransforms()[id].GetOutputs()
			for _, tag := range slices.Sorted(maps.Keys(outs)) {
				ident := ix.name[id] + "\x00" + tag
				ix.pcIdent[outs[tag]], ix.pcOf[ident] = ident, outs[tag]
			}
		}
	}
	return ix
}

// describePC names a PCollection for a user: its producer and tag.
func (ix planIndex) describePC(pc string) string {
	if ident, ok := ix.pcIdent[pc]; ok {
		name, tag, _ := cutNul(ident)
		return fmt.Sprintf("PCollection %q (output %q of %q)", pc, tag, name)
	}
	return fmt.Sprintf("PCollection %q", pc)
}

func cutNul(s string) (string, string, bool) {
	for i := range len(s) {
		if s[i] == 0 {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// remapping is what an old plan's state becomes in a new one.
type remapping struct {
	old, now planIndex
	m        savepoint.Mapping
	drop     bool // --allow_dropped_state
}

// pc is the new plan's id of old PCollection pc, "" if it has none.
func (r remapping) pc(pc string) string {
	name, tag, ok := cutNul(r.old.pcIdent[pc])
	if !ok {
		return ""
	}
	return r.now.pcOf[r.m.Apply(name)+"\x00"+tag]
}

// stageFor is the new stage that is old stage s: the one whose first
// transform is s's (by mapped name), of the same kind and keying. Its
// inputs may be other PCollections (a step added upstream): what s
// holds of them is already past that step, and goes to s's transform
// as it is, if their coders did not change (heldPC).
func (r remapping) stageFor(s *plan.Stage) *plan.Stage {
	n := r.now.first[r.m.Apply(r.old.name[s.Transforms[0]])]
	if n == nil || n.Kind != s.Kind || n.Stateful != s.Stateful || len(n.Inputs) != len(s.Inputs) {
		return nil
	}
	return n
}

// startStage lists the new pipeline's transforms (by id) that must
// start a stage so that each old stage holding saved input has its
// counterpart: the mapped first transform, reading the same PCollection,
// which the new plan fused into its producer's stage.
func startStage(r remapping, held engine.Held) []string {
	var out []string
	for _, s := range r.old.pl.Stages {
		if !held.Stages[s.ID].Input || s.Kind != stagekind.SDK || r.stageFor(s) != nil {
			continue
		}
		id, ok := r.now.byName[r.m.Apply(r.old.name[s.Transforms[0]])]
		if ok && r.now.first[r.now.name[id]] == nil {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// rehoming decides where each stage's and PCollection's saved state
// goes in the new plan, refusing, with the transform and why, what
// would be lost or misread.
func rehoming(r remapping, held engine.Held) (engine.Rehoming, error) {
	h := engine.Rehoming{Stages: map[string]string{}, Input: map[string]string{}, PColls: map[string]string{}, Transforms: map[string]string{}}
	for id, name := range r.old.name {
		if to, ok := r.now.byName[r.m.Apply(name)]; ok {
			h.Transforms[id] = to
		}
	}
	var errs []error
	for _, s := range r.old.pl.Stages {
		errs = append(errs, r.rehomeStage(s, held.Stages[s.ID], h)...)
	}
	for _, pc := range slices.Sorted(maps.Keys(r.old.pl.Wire)) {
		to := r.pc(pc)
		if to != "" {
			h.PColls[to] = pc
		}
		if held.PColls[pc] {
			errs = append(errs, r.heldPC(pc, to, "side-input data")...)
		}
	}
	return h, errors.Join(errs...)
}

// rehomeStage places old stage s's state (sh) in h, or says why not.
func (r remapping) rehomeStage(s *plan.Stage, sh engine.StageHeld, h engine.Rehoming) []error {
	name := r.old.name[s.Transforms[0]]
	if n := r.stageFor(s); n != nil {
		h.Stages[n.ID] = s.ID
		var errs []error
		for i, in := range s.Inputs {
			if sh.Input || sh.Keyed {
				errs = append(errs, r.heldPC(in, n.Inputs[i], fmt.Sprintf("input of %q", name))...)
			}
		}
		return errs
	}
	var errs []error
	if (sh.Keyed || sh.Grouped || sh.Residuals) && !r.drop {
		what := map[bool]string{true: "its read position (a splittable DoFn's residuals)", false: "state"}[sh.Residuals && !sh.Keyed && !sh.Grouped]
		errs = append(errs, fmt.Errorf("step %q holds %s, and the new pipeline has no such step reading the same input: it would be lost (map its new name with --transform_name_mapping, or drop it with --allow_dropped_state)", name, what))
	}
	if !sh.Input || len(s.Inputs) == 0 {
		return errs
	}
	in := r.pc(s.Inputs[0])
	if readers := r.now.readers[in]; in != "" && len(readers) == 1 && len(r.old.readers[s.Inputs[0]]) == 1 && h.Stages[readers[0].ID] == "" {
		h.Input[readers[0].ID] = s.ID
		return append(errs, r.heldPC(s.Inputs[0], in, fmt.Sprintf("input of %q", name))...)
	}
	return append(errs, fmt.Errorf("%s holds saved input of %q, which the new pipeline does not read as its only consumer: it would be lost", r.old.describePC(s.Inputs[0]), name))
}

// heldPC refuses a PCollection holding saved data (what) that the new
// plan lacks or encodes differently.
func (r remapping) heldPC(pc, to, what string) []error {
	if to == "" {
		return []error{fmt.Errorf("%s holds saved %s and is not in the new pipeline: it would be lost", r.old.describePC(pc), what)}
	}
	o, n := savepoint.CoderSpec(r.old.pl.Components, r.old.pl.Wire[pc]), savepoint.CoderSpec(r.now.pl.Components, r.now.pl.Wire[to])
	if o != n {
		return []error{fmt.Errorf("%s holds saved %s, and its coder changed from %s to %s: it could not be read", r.old.describePC(pc), what, o, n)}
	}
	return nil
}
