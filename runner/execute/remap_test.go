package execute

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/engine"
	"github.com/beam-runner/beam-runner/runner/jobs"
	"github.com/beam-runner/beam-runner/runner/plan"
	"github.com/beam-runner/beam-runner/runner/savepoint"
	"github.com/beam-runner/beam-runner/runner/spec"
	"github.com/beam-runner/beam-runner/runner/userstate"
	"github.com/beam-runner/beam-runner/testsupport/counting"
	"github.com/beam-runner/beam-runner/testsupport/gopipe"
)

var remapT0 = time.UnixMilli(1_700_000_000_000)

func versionProto(t *testing.T, v counting.Variant) *pipepb.Pipeline {
	t.Helper()
	p, s := beam.NewPipelineWithRoot()
	counting.Version(remapT0, remapT0.Add(time.Minute), 20*time.Millisecond, v)(s)
	return gopipe.ForTest(t, p)
}

func versionPlan(t *testing.T, v counting.Variant, starts ...string) *plan.Plan {
	t.Helper()
	pl, err := spec.PlanStarting(versionProto(t, v), starts)
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

// stageStarting is the id of pl's stage whose first transform's unique
// name starts with prefix.
func stageStarting(t *testing.T, pl *plan.Plan, prefix string) *plan.Stage {
	t.Helper()
	for _, s := range pl.Stages {
		if strings.HasPrefix(pl.Components.GetTransforms()[s.Transforms[0]].GetUniqueName(), prefix) {
			return s
		}
	}
	t.Fatalf("no stage starts with %q", prefix)
	return nil
}

// The remapping of a savepoint onto a new version of the pipeline, on
// real Go SDK plans: stateful and grouping stages are found by their
// first transform's name (through the mapping) in whatever stages the
// new plan fuses; what would be lost or misread is refused, naming the
// step.
func TestRehomingOfRealPlans(t *testing.T) {
	old := versionPlan(t, counting.Variant{})
	running, group := stageStarting(t, old, "running/"), stageStarting(t, old, "group")
	keyed := engine.Held{Stages: map[string]engine.StageHeld{running.ID: {Keyed: true, Input: true}, group.ID: {Grouped: true}}}
	for _, c := range []struct {
		name    string
		now     counting.Variant
		m       savepoint.Mapping
		drop    bool
		want    string // in the error; "" for none
		carried []string
	}{
		{name: "same", carried: []string{"running/", "group"}},
		{name: "a stateless step added", now: counting.Variant{Scale: true}, carried: []string{"running/", "group"}},
		{name: "renamed, not mapped", now: counting.Variant{RunningScope: "tally"}, want: `step "running/counting.runningFn" holds state, and the new pipeline has no such step`},
		{name: "renamed and mapped", now: counting.Variant{RunningScope: "tally"}, m: savepoint.Mapping{"running": "tally"}, carried: []string{"tally/", "group"}},
		{name: "renamed, dropped", now: counting.Variant{RunningScope: "tally"}, drop: true, carried: []string{"group"}},
		{name: "value coder changed", now: counting.Variant{StringValues: true}, want: `(output "i0" of "key/counting.tickKeyFn") holds saved input of "running/counting.runningFn", and its coder changed from`},
	} {
		t.Run(c.name, func(t *testing.T) {
			now := versionPlan(t, c.now)
			r := remapping{old: indexPlan(old), now: indexPlan(now), m: c.m, drop: c.drop}
			h, err := rehoming(r, keyed)
			if c.want != "" {
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("rehoming: %v, want an error saying %q", err, c.want)
				}
				return
			}
			if err != nil {
				t.Fatalf("rehoming: %v", err)
			}
			var carried []string
			for _, to := range slices.Sorted(mapsKeys(h.Stages)) {
				from := h.Stages[to]
				if from == running.ID || from == group.ID {
					carried = append(carried, stageByID(now, to).Transforms[0])
				}
			}
			for _, want := range c.carried {
				if !slices.ContainsFunc(carried, func(id string) bool {
					return strings.HasPrefix(now.Components.GetTransforms()[id].GetUniqueName(), want)
				}) {
					t.Errorf("the stage starting %q did not take its state (carried %v)", want, carried)
				}
			}
			if len(carried) != len(c.carried) {
				t.Errorf("carried %v, want %v", carried, c.carried)
			}
		})
	}
}

// A stage that held saved input in the old plan, whose first transform
// the new plan fuses into its producer's stage, is kept a stage of its
// own by a fusion constraint; one holding nothing is not.
func TestStartStageKeepsHeldInputMaterialised(t *testing.T) {
	plain := versionPlan(t, counting.Variant{Scale: true})
	scaleID := ""
	for id, tr := range plain.Components.GetTransforms() {
		if strings.HasPrefix(tr.GetUniqueName(), "scale/") && len(tr.GetSubtransforms()) == 0 {
			scaleID = id
		}
	}
	old := versionPlan(t, counting.Variant{Scale: true}, scaleID)
	scale := stageStarting(t, old, "scale/")
	r := remapping{old: indexPlan(old), now: indexPlan(plain)}
	if got := startStage(r, engine.Held{Stages: map[string]engine.StageHeld{scale.ID: {Input: true}}}); !slices.Equal(got, []string{scaleID}) {
		t.Errorf("startStage = %v, want [%s]", got, scaleID)
	}
	if got := startStage(r, engine.Held{}); len(got) != 0 {
		t.Errorf("startStage of nothing held = %v", got)
	}
}

// An engine's snapshot rehomed onto another version's plan restores
// there, with the renamed stateful stage's timers' transform renamed.
func TestRemapCheckpointRestores(t *testing.T) {
	old := versionPlan(t, counting.Variant{})
	oldSpec, err := spec.Build(old, spec.Config{})
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(oldSpec)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := e.SnapshotRequeuingFlight()
	if err != nil {
		t.Fatal(err)
	}
	c := checkpoint{engine: snap, state: emptyState(t)}
	for _, v := range []counting.Variant{{Scale: true}, {RunningScope: "tally"}} {
		rc, err := remapCheckpoint(c, old, versionProto(t, v), nil, jobsRestore(savepoint.Mapping{"running": "tally"}))
		if err != nil {
			t.Fatalf("%+v: %v", v, err)
		}
		newSpec, err := spec.Build(rc.plan, spec.Config{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := engine.Restore(newSpec, rc.ckpt.engine); err != nil {
			t.Errorf("%+v: the rehomed snapshot does not restore: %v", v, err)
		}
	}
}

func stageByID(pl *plan.Plan, id string) *plan.Stage {
	for _, s := range pl.Stages {
		if s.ID == id {
			return s
		}
	}
	return nil
}

func mapsKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func emptyState(t *testing.T) []byte { return userstate.NewStore().Snapshot() }

func jobsRestore(m savepoint.Mapping) jobs.RestoreOptions { return jobs.RestoreOptions{Mapping: m} }
