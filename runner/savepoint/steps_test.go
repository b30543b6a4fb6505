package savepoint_test

import (
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/savepoint"
	"github.com/beam-runner/beam-runner/testsupport/counting"
	"github.com/beam-runner/beam-runner/testsupport/gopipe"
)

var t0 = time.UnixMilli(1_700_000_000_000)

// countingProto is counting.Pipeline's pipeline proto, as the Go SDK makes it.
func countingProto(t *testing.T, start time.Time, stringValues bool) *pipepb.Pipeline {
	t.Helper()
	p, s := beam.NewPipelineWithRoot()
	counting.Pipeline(start, start.Add(time.Minute), 20*time.Millisecond, stringValues)(s)
	return gopipe.ForTest(t, p)
}

func steps(t *testing.T, p *pipepb.Pipeline) []savepoint.Step {
	t.Helper()
	st, err := savepoint.Steps(p)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// find returns the one step of kind whose name starts with prefix.
func find(t *testing.T, ss []savepoint.Step, kind, prefix string) savepoint.Step {
	t.Helper()
	var got []savepoint.Step
	for _, s := range ss {
		if s.Kind == kind && strings.HasPrefix(s.Name, prefix) {
			got = append(got, s)
		}
	}
	if len(got) != 1 {
		t.Fatalf("%d %s steps named %s* among %+v, want 1", len(got), kind, prefix, ss)
	}
	return got[0]
}

func TestStepsOfAStatefulWindowedCount(t *testing.T) {
	ss := steps(t, countingProto(t, t0, false))
	run := find(t, ss, savepoint.Stateful, "running")
	// Go's int has a custom coder (length-prefixed), keys and values alike.
	if run.Key.Spec == "" || run.Value.Spec != run.Key.Spec || !strings.Contains(run.Key.Spec, "beam:go:coder:custom:v1") {
		t.Errorf("stateful step's key and value coders %q, %q; want Go's int coder both", run.Key.Spec, run.Value.Spec)
	}
	if run.Window.Spec != "beam:coder:global_window:v1" {
		t.Errorf("stateful step's window coder %q, want the global window's", run.Window.Spec)
	}
	if got, want := run.State["seen"], "value("+run.Key.Spec+")"; got != want {
		t.Errorf("state seen = %q, want %q", got, want)
	}
	grp := find(t, ss, savepoint.Grouping, "group")
	if grp.Window.Spec != "beam:coder:interval_window:v1" {
		t.Errorf("GroupByKey's window coder %q, want interval windows'", grp.Window.Spec)
	}
	t.Logf("steps: %+v", ss)
	for _, s := range ss {
		if strings.HasPrefix(s.Name, "key") || strings.HasPrefix(s.Name, "report") {
			t.Errorf("stateless step %q listed as %s", s.Name, s.Kind)
		}
	}
}
