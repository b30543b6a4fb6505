package spec

import (
	"github.com/beam-runner/beam-runner/testsupport/gopipe"
	"runtime"
	"slices"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"
	"github.com/beam-runner/beam-runner/runner/engine"
	"github.com/beam-runner/beam-runner/runner/engine/agg"
	"github.com/beam-runner/beam-runner/runner/plan"
	"github.com/beam-runner/beam-runner/runner/stagekind"
	"google.golang.org/protobuf/types/known/structpb"
)

// namedSpace is a spill space that only records its name: Build opens
// spaces, it never writes them.
type namedSpace struct{ name string }

func (namedSpace) WriteRun(keys, values [][]byte) error                 { return nil }
func (namedSpace) Scan(prefix []byte, fn func(k, v []byte) error) error { return nil }
func (namedSpace) DeletePrefix(prefix []byte) error                     { return nil }
func (namedSpace) ScanFrom(prefix, from []byte, fn func(k, v []byte) error) error {
	return nil
}

// gbkPlan plans Create -> key by length -> GroupByKey -> count, with no
// environment to start.
func gbkPlan(t *testing.T) *plan.Plan {
	t.Helper()
	p, s := beam.NewPipelineWithRoot()
	beam.ParDo(s, countGroup, beam.GroupByKey(s, beam.ParDo(s, keyByLen, beam.Create(s, "a", "bb"))))
	pl, err := plan.Build(gopipe.ForTest(t, p))
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

func onlyStage(t *testing.T, spec engine.Spec, k stagekind.Kind) engine.StageSpec {
	t.Helper()
	var out []engine.StageSpec
	for _, ss := range spec.Stages {
		if ss.Kind == k {
			out = append(out, ss)
		}
	}
	if len(out) != 1 {
		t.Fatalf("%d %s stages, want 1", len(out), k)
	}
	return out[0]
}

// Build translates a plan alone: stages in the plan's order and
// kinds, the executor's bounds, a keyed GroupByKey input, and no spill
// without a store.
func TestBuildSpecFromPlanAlone(t *testing.T) {
	pl := gbkPlan(t)
	spec, err := Build(pl, Config{Parallelism: 3, MaxAttempts: 2, StartTime: 42})
	if err != nil {
		t.Fatal(err)
	}
	if spec.MaxBundles != 3 || spec.MaxAttempts != 2 || spec.StartTime != 42 || spec.Streaming {
		t.Errorf("spec bounds %d %d %d streaming %v, want 3 2 42 batch", spec.MaxBundles, spec.MaxAttempts, spec.StartTime, spec.Streaming)
	}
	if len(spec.Stages) != len(pl.Stages) {
		t.Fatalf("%d engine stages for %d planned", len(spec.Stages), len(pl.Stages))
	}
	for i, s := range pl.Stages {
		if ss := spec.Stages[i]; ss.ID != s.ID || ss.Kind != s.Kind {
			t.Errorf("engine stage %d is %s %s, planned %s %s", i, ss.ID, ss.Kind, s.ID, s.Kind)
		}
	}
	gbk := onlyStage(t, spec, stagekind.GBK)
	if in := spec.PColls[gbk.Inputs[0]]; in.Codec == nil || in.Key == nil {
		t.Errorf("GroupByKey input %s: codec %v key %v, want both", gbk.Inputs[0], in.Codec, in.Key)
	}
	if gbk.Agg.Spill != nil || spec.PendingSpill != nil {
		t.Error("spill without a store")
	}
}

// Under a memory limit, each GroupByKey gets its share in its own space,
// and SDK stages' pending input spills only when bounded.
func TestBuildSpecSpillSpaces(t *testing.T) {
	pl := gbkPlan(t)
	var opened []string
	space := func(name string) agg.Spill { opened = append(opened, name); return namedSpace{name} }
	for _, bound := range []bool{false, true} {
		opened = nil
		spec, err := Build(pl, Config{Parallelism: 1, Space: space, MemoryLimit: 800, BoundPending: bound})
		if err != nil {
			t.Fatal(err)
		}
		gbk := onlyStage(t, spec, stagekind.GBK)
		if sp, ok := gbk.Agg.Spill.(namedSpace); !ok || sp.name != gbk.ID+"/" || gbk.Agg.SpillBudget != 300 {
			t.Errorf("bound %v: GroupByKey spills to %v with %d bytes, want space %q with 300", bound, gbk.Agg.Spill, gbk.Agg.SpillBudget, gbk.ID+"/")
		}
		if got := spec.PendingSpill != nil; got != bound || (bound && spec.PendingBudget != 300) {
			t.Errorf("bound %v: pending spill %v budget %d", bound, got, spec.PendingBudget)
		}
		if bound != slices.Contains(opened, "\x00pending/") {
			t.Errorf("bound %v: opened %q", bound, opened)
		}
	}
}

// Stages of Python worker processes run one bundle per process; LOOPBACK
// Python (one interpreter: the probe decides) and Go have no cap.
func TestPythonProcessesCapStages(t *testing.T) {
	py := &pipepb.Environment{Capabilities: []string{"beam:version:sdk_base:apache/beam_python3.11_sdk:2.77.0"}}
	goEnv := &pipepb.Environment{Capabilities: []string{"beam:version:sdk_base:go:apache/beam_go_sdk:2.77.0"}}
	opts := func(m map[string]any) *structpb.Struct {
		s, err := structpb.NewStruct(m)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, tc := range []struct {
		name string
		env  *pipepb.Environment
		opts *structpb.Struct
		want int
	}{
		{"python processes, 3 workers", py, opts(map[string]any{"beam:option:workers_per_environment:v1": "3"}), 3},
		{"python processes, default", py, opts(nil), runtime.NumCPU()},
		{"python LOOPBACK", py, opts(map[string]any{"beam:option:environment_type:v1": "LOOPBACK"}), 0},
		{"go", goEnv, opts(nil), 0},
	} {
		if got := pythonProcesses(tc.env, tc.opts); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

// A lifted combine's GroupByKey gets a combiner tree and its merge stage,
// unless the options turn trees off; a plain GroupByKey gets neither.
func TestBuildSpecCombineTree(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	stats.Count(s, beam.Create(s, "a", "b", "a"))
	pl, err := plan.Build(gopipe.ForTest(t, p))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := Build(pl, Config{Parallelism: 2, CombineTreeBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	gbk := onlyStage(t, spec, stagekind.GBK)
	if c := gbk.Agg.Combine; c == nil || c.PassBytes != 1000 || gbk.TreeStage != gbk.ID+"/combine-tree" {
		t.Errorf("lifted combine's GroupByKey: tree %+v, merge stage %q", c, gbk.TreeStage)
	}
	if _, err := engine.New(spec); err != nil {
		t.Errorf("the engine refuses the spec: %v", err)
	}
	spec, err = Build(pl, Config{Parallelism: 2, CombineTreeBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	if gbk := onlyStage(t, spec, stagekind.GBK); gbk.Agg.Combine != nil || gbk.TreeStage != "" {
		t.Errorf("trees off: tree %+v, merge stage %q", gbk.Agg.Combine, gbk.TreeStage)
	}
	spec, err = Build(gbkPlan(t), Config{Parallelism: 2})
	if err != nil {
		t.Fatal(err)
	}
	if gbk := onlyStage(t, spec, stagekind.GBK); gbk.Agg.Combine != nil || gbk.TreeStage != "" {
		t.Errorf("plain GroupByKey: tree %+v, merge stage %q", gbk.Agg.Combine, gbk.TreeStage)
	}
}

// Under autoscaling a Python environment's stages may run a bundle per
// worker process it may grow to, never fewer than unscaled: with the cap
// at the starting processes, the workers added would get no bundles.
func TestScaledMaxRaisesPythonCap(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	stats.Count(s, beam.Create(s, "a", "b", "a"))
	pl, err := plan.Build(gopipe.ForTest(t, p))
	if err != nil {
		t.Fatal(err)
	}
	for _, env := range pl.Components.GetEnvironments() {
		env.Capabilities = []string{"beam:version:sdk_base:apache/beam_python3.11_sdk:2.77.0"}
	}
	var envID string
	for _, st := range pl.Stages {
		if st.Kind == stagekind.SDK {
			envID = st.Env
		}
	}
	opts, err := structpb.NewStruct(map[string]any{"beam:option:workers_per_environment:v1": "2"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		scaled    map[string]int
		want, all int
	}{
		{nil, 2, 4},
		{map[string]int{envID: 6}, 6, 6},
		{map[string]int{envID: 1}, 2, 4},
	} {
		spec, err := Build(pl, Config{Parallelism: 4, Options: opts, ScaledMax: tc.scaled, CombineTreeBytes: -1})
		if err != nil {
			t.Fatal(err)
		}
		for _, ss := range spec.Stages {
			if ss.Kind == stagekind.SDK && ss.MaxBundles != tc.want {
				t.Errorf("scaled %v: stage %s caps %d bundles, want %d", tc.scaled, ss.ID, ss.MaxBundles, tc.want)
			}
		}
		if spec.MaxBundles != tc.all {
			t.Errorf("scaled %v: the engine's cap %d, want %d", tc.scaled, spec.MaxBundles, tc.all)
		}
	}
}
