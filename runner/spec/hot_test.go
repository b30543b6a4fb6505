package spec

import (
	"github.com/beam-runner/beam-runner/testsupport/gopipe"
	"os"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/engine/agg"
	"github.com/beam-runner/beam-runner/runner/plan"
	"github.com/beam-runner/beam-runner/runner/stagekind"
	"google.golang.org/protobuf/proto"
)

// hotGBKs plans a pipeline and returns, per GroupByKey transform name,
// whether the GroupByKey pages hot keys under a memory limit.
func hotGBKs(t *testing.T, pb *pipepb.Pipeline) map[string]bool {
	t.Helper()
	pl, err := plan.Build(pb)
	if err != nil {
		t.Fatal(err)
	}
	space := func(name string) agg.Spill { return namedSpace{name} }
	spec, err := Build(pl, Config{Parallelism: 1, Space: space, MemoryLimit: 800})
	if err != nil {
		t.Fatal(err)
	}
	hot := map[string]bool{}
	for i, s := range pl.Stages {
		if s.Kind == stagekind.GBK {
			hot[pl.Components.GetTransforms()[s.Transforms[0]].GetUniqueName()] = spec.Stages[i].Agg.Hot != nil
		}
	}
	return hot
}

// Python stages told their values are state-backed (plan/statebacked.go)
// get hot keys paged, as Go stages do; a GroupByKey whose output is also
// read as a side input, whose reader takes no token, does not.
func TestHotKeysForStateBackedReaders(t *testing.T) {
	b, err := os.ReadFile("../plan/testdata/python_gbk.pb")
	if err != nil {
		t.Fatal(err)
	}
	var pb pipepb.Pipeline
	if err := proto.Unmarshal(b, &pb); err != nil {
		t.Fatal(err)
	}
	hot := hotGBKs(t, &pb)
	for name, want := range map[string]bool{"Main": true, "Side": false} {
		if got, ok := hot[name]; !ok || got != want {
			t.Errorf("Python GroupByKey %s: hot keys paged %v (planned %v), want %v", name, got, ok, want)
		}
	}
	var combines int
	for name, got := range hot {
		if strings.HasPrefix(name, "CombinePerKey") {
			combines++
			if !got {
				t.Errorf("lifted combine's GroupByKey %s does not page hot keys", name)
			}
		}
	}
	if combines != 1 {
		t.Errorf("%d lifted combine GroupByKeys in %v, want 1", combines, hot)
	}
	p, s := beam.NewPipelineWithRoot()
	beam.ParDo(s, sumLengths, beam.GroupByKey(s, beam.ParDo(s, emitOneKey, beam.Impulse(s))))
	for name, got := range hotGBKs(t, gopipe.ForTest(t, p)) {
		if !got {
			t.Errorf("Go GroupByKey %s does not page hot keys", name)
		}
	}
}
