package execute

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/beam-runner/beam-runner/runner/plan"
	"github.com/beam-runner/beam-runner/runner/spec"
	"github.com/beam-runner/beam-runner/runner/stagekind"
	"github.com/beam-runner/beam-runner/testsupport/gopipe"
)

// The DS2 graph of a streaming pipeline: the splittable read is a source
// (its input is restrictions, not elements), the stage after the
// Reshuffle reads it through the GroupByKey, and passert's count reads
// that stage through its combine's GroupByKey. (Stages whose main input
// is an impulse, as passert's side-input checks, are sources too.)
func TestScaleGraphLooksThroughRunnerStages(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	src := beam.ParDo(s, &floodSource{WholeRange: WholeRange{N: 10}, Batch: 5, Size: 1}, beam.Impulse(s))
	passert.Count(s, beam.ParDo(s, keyByLen, beam.ParDo(s, func(b []byte) string { return string(b) }, beam.Reshuffle(s, src))), "", 10)
	pipe, err := gopipe.Marshal(context.Background(), p, "beam:env:external:v1", "localhost:1")
	if err != nil {
		t.Fatal(err)
	}
	pl, err := spec.Plan(pipe)
	if err != nil {
		t.Fatal(err)
	}
	stage := map[string]*plan.Stage{}
	sdk := map[string]*sdkStage{}
	for _, st := range pl.Stages {
		stage[st.ID] = st
		if st.Kind == stagekind.SDK {
			sdk[st.ID] = &sdkStage{stage: st}
		}
	}
	g := scaleGraph(pl, sdk)
	byID := map[string][]string{}
	var lines []string
	for _, st := range g {
		for _, e := range st.Inputs {
			byID[st.ID] = append(byID[st.ID], e.From)
		}
		lines = append(lines, fmt.Sprintf("%s %s <- %v", st.ID, spec.StageName(pl, stage[st.ID]), byID[st.ID]))
	}
	graph := strings.Join(lines, "\n")
	var read string
	for _, st := range g {
		if splittableRead(pl, stage[st.ID]) {
			read = st.ID
		}
	}
	if read == "" || len(byID[read]) != 0 {
		t.Fatalf("the splittable read is no source of the graph:\n%s", graph)
	}
	named := func(prefix string) string {
		for _, st := range g {
			if strings.HasPrefix(spec.StageName(pl, stage[st.ID]), prefix) {
				return st.ID
			}
		}
		t.Fatalf("no stage %q in the graph:\n%s", prefix, graph)
		return ""
	}
	slow, count := named("Reshuffle/"), named("passert.Count()/CombinePerKey/Merge")
	if !slices.Equal(byID[slow], []string{read}) || !slices.Equal(byID[count], []string{slow}) {
		t.Errorf("want %s <- %s <- %s (the read):\n%s", count, slow, read, graph)
	}
	t.Logf("graph:\n%s", graph)
}
