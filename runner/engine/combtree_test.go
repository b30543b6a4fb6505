package engine

import (
	"slices"
	"testing"

	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/runner/engine/agg"
	"github.com/beam-runner/beam-runner/runner/stagekind"
)

// TestTreeSourceCheckpoints: a source bundle feeding a combiner tree is
// checkpointed each time it has sent another treeCheckpointBytes of
// output, with no memory limit, so the tree gets its accumulators in
// pieces it can merge; a source feeding a plain GroupByKey is not yet.
func TestTreeSourceCheckpoints(t *testing.T) {
	for _, tree := range []bool{false, true} {
		spec := splittableSpec(t, 1)
		spec.Streaming = false // no checkpoints by time (streamCheckpoints)
		spec.PColls["pre"] = PCollSpec{Codec: wvCodec(t, "wv-kv"), Key: mustCompile(t, "bytes")}
		spec.PColls["grouped"] = PCollSpec{Codec: wvCodec(t, "wv-kv")} // never read here
		spec.Stages[1].Outputs = []string{"pre"}
		gbk := StageSpec{ID: "gbk", Kind: stagekind.GBK, Inputs: []string{"pre"}, Outputs: []string{"grouped"}, Agg: agg.Config{Window: coders.GlobalWindow}}
		if tree {
			gbk.Agg.Combine, gbk.TreeStage = &agg.CombineTree{}, "gbk/merge"
		}
		spec.Stages = append(spec.Stages, gbk)
		e, bs := startOne(t, spec)
		e.AdvanceProcessingTime(1 << 40)
		e.NoteOutput(bs[0].ID, treeCheckpointBytes-1)
		if got := e.splitRequests(); len(got) != 0 {
			t.Fatalf("tree=%v: checkpoint requested before %d bytes of output: %v", tree, treeCheckpointBytes, got)
		}
		e.NoteOutput(bs[0].ID, treeCheckpointBytes)
		var want []SplitRequest
		if tree {
			want = []SplitRequest{{Bundle: bs[0].ID}}
		}
		if got := e.splitRequests(); !slices.Equal(got, want) {
			t.Fatalf("tree=%v: splitRequests = %v, want %v", tree, got, want)
		}
	}
}
