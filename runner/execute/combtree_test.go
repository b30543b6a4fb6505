package execute

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"
	"github.com/beam-runner/beam-runner/runner/jobs"
	"github.com/beam-runner/beam-runner/runner/stagekind"
)

func init() {
	beam.RegisterFunction(emitLines)
	beam.RegisterFunction(lineWords)
}

// treeLines, of treeWords words each, make about 4 MiB once reshuffled:
// the counting stage gets several bundles, so the GroupByKey gets several
// chunks of precombined accumulators.
const treeLines, treeWords = 40_000, 12

func emitLines(_ []byte, emit func(string)) {
	for i := 0; i < treeLines; i++ {
		var b strings.Builder
		for j := 0; j < treeWords; j++ {
			fmt.Fprintf(&b, "w%d ", (i*treeWords+j)%97)
		}
		emit(b.String())
	}
}

func lineWords(line string, emit func(string)) {
	for _, w := range strings.Fields(line) {
		emit(w)
	}
}

// TestCombineTreeCountsExactly is metamorphic: a lifted combine over
// several bundles gives the same counts with a combiner tree that combines
// at every chunk (its GroupByKey then runs combine bundles) as without one.
func TestCombineTreeCountsExactly(t *testing.T) {
	want := map[string]int{}
	for i := 0; i < treeLines*treeWords; i++ {
		want[fmt.Sprintf("w%d", i%97)]++
	}
	var wantLines []string
	for w, n := range want {
		wantLines = append(wantLines, fmt.Sprintf("%s:%d", w, n))
	}
	build := func() *beam.Pipeline {
		p, s := beam.NewPipelineWithRoot()
		lines := beam.Reshuffle(s, beam.ParDo(s, emitLines, beam.Impulse(s)))
		counts := stats.Count(s, beam.ParDo(s, lineWords, lines))
		passert.Equals(s, beam.ParDo(s, formatCount, counts), beam.CreateList(s, wantLines))
		return p
	}
	for _, c := range []struct {
		name      string
		treeBytes int
		combines  bool
	}{
		{"without a tree", -1, false},
		{"combining every chunk", 1, true},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		j := &jobs.Job{ID: "test", Name: t.Name()}
		err := runOn(ctx, New(Options{CombineTreeBytes: c.treeBytes}), build(), j, map[string]any{})
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		combines := int64(0)
		for _, st := range j.Stats().Snapshot().Stages {
			if st.Kind == stagekind.GBK.String() {
				combines += st.BundlesDone
			}
		}
		t.Logf("%s: %d combine bundles", c.name, combines)
		if (combines > 0) != c.combines {
			t.Errorf("%s: the GroupByKeys ran %d combine bundles", c.name, combines)
		}
	}
}
