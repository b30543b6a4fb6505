package plan

import (
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/beam-runner/beam-runner/testsupport/gopipe"
)

// A transform with side inputs after a WindowInto starts its own stage:
// the engine takes a streaming stage's elements by the windows they
// arrive in, which must be the windows the side inputs' reader sees (as
// Java's Wait.on: Window.into, then a map that waits on the signal).
func TestSideInputAfterWindowIntoStartsStage(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	words := beam.ParDo(s, splitWords, beam.Create(s, "a b"))
	fixed := window.NewFixedWindows(2 * time.Second)
	windowed := beam.WindowInto(s, fixed, words)
	nums := beam.WindowInto(s, fixed, beam.Create(s, 1, 2))
	beam.ParDo(s, withSide, windowed, beam.SideInput{Input: nums})
	pl, err := Build(gopipe.ForTest(t, p))
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range pl.Stages {
		if len(st.SideInputs) == 0 {
			continue
		}
		first := pl.Components.GetTransforms()[st.Transforms[0]]
		if len(first.GetInputs()) < 2 {
			t.Errorf("stage %s reads side inputs but starts with %q, which reads none", st.ID, first.GetUniqueName())
		}
		for _, id := range st.Transforms {
			if pl.Components.GetTransforms()[id].GetSpec().GetUrn() == URNWindowInto {
				t.Errorf("stage %s reads side inputs and assigns windows in %q", st.ID, id)
			}
		}
		return
	}
	t.Fatal("no stage reads the side input")
}
