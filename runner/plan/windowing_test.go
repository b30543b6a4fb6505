package plan

import (
	"github.com/beam-runner/beam-runner/testsupport/gopipe"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"
	"google.golang.org/protobuf/proto"

	"github.com/beam-runner/beam-runner/runner/stagekind"
)

// SDK and GroupByKey stages carry their main input's windowing strategy,
// so the engine's spec is built from the plan without reading it again.
func TestStagesCarryInputWindowing(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	words := beam.ParDo(s, splitWords, beam.Create(s, "a b", "b"))
	stats.Count(s, beam.WindowInto(s, window.NewFixedWindows(time.Minute), words))
	pl, err := Build(gopipe.ForTest(t, p))
	if err != nil {
		t.Fatal(err)
	}
	fixed := 0
	for _, st := range pl.Stages {
		if st.Kind != stagekind.SDK && st.Kind != stagekind.GBK {
			if st.Windowing != nil {
				t.Errorf("%s stage %s has a windowing strategy", st.Kind, st.ID)
			}
			continue
		}
		pc := pl.Components.GetPcollections()[st.Inputs[0]]
		want := pl.Components.GetWindowingStrategies()[pc.GetWindowingStrategyId()]
		if st.Windowing == nil || !proto.Equal(st.Windowing, want) {
			t.Errorf("%s stage %s: windowing %v, want its input's %v", st.Kind, st.ID, st.Windowing, want)
		}
		if st.Kind == stagekind.GBK && st.Windowing.GetWindowFn().GetUrn() == URNFixedWindows {
			fixed++
		}
	}
	if fixed != 1 {
		t.Errorf("%d GroupByKeys in fixed windows, want 1", fixed)
	}
}
