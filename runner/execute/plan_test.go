package execute

import (
	"github.com/beam-runner/beam-runner/testsupport/gopipe"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/jobs"
	"github.com/beam-runner/beam-runner/runner/plan"
	"google.golang.org/protobuf/proto"
)

// The plan built at Prepare is the one the job runs, with its
// environments as staged; a job resumed without one, or whose anyof
// environment was resolved (a pipeline other than the job's), plans anew.
func TestJobPlanBuiltOnce(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	beam.ParDo(s, countGroup, beam.GroupByKey(s, beam.ParDo(s, keyByLen, beam.Create(s, "a", "bb"))))
	pb := gopipe.ForTest(t, p)
	prepared, err := New(Options{}).Plan(pb)
	if err != nil {
		t.Fatal(err)
	}
	staged := proto.Clone(pb).(*pipepb.Pipeline)
	dep := &pipepb.ArtifactInformation{TypeUrn: "beam:artifact:type:file:v1", RoleUrn: "staged"}
	for _, env := range staged.GetComponents().GetEnvironments() {
		env.Dependencies = []*pipepb.ArtifactInformation{dep}
	}
	j := &jobs.Job{Pipeline: staged, Prepared: prepared}
	pl, err := jobPlan(j, staged)
	if err != nil || pl != prepared {
		t.Fatalf("jobPlan = %p, %v; want the plan from Prepare %p", pl, err, prepared)
	}
	for id, env := range pl.Components.GetEnvironments() {
		if len(env.GetDependencies()) != 1 || !proto.Equal(env.GetDependencies()[0], dep) {
			t.Errorf("environment %q of the plan has dependencies %v, want the staged ones", id, env.GetDependencies())
		}
	}
	resolved := proto.Clone(staged).(*pipepb.Pipeline)
	for name, job := range map[string]*jobs.Job{"resumed": {Pipeline: staged}, "anyof resolved": j} {
		in := staged
		if name == "anyof resolved" {
			in = resolved
		}
		pl, err := jobPlan(job, in)
		if err != nil || pl == nil || pl == prepared.(*plan.Plan) {
			t.Errorf("%s: jobPlan = %p, %v; want a plan of its own", name, pl, err)
		}
	}
}
