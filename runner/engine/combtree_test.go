package engine

import (
	"bytes"
	"slices"
	"testing"

	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/runner/engine/agg"
	"github.com/beam-runner/beam-runner/runner/stagekind"
	"github.com/cockroachdb/datadriven"
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
			gbk.Agg.Combine, gbk.TreeStage = &agg.CombineTree{}, "gbk/combine-tree"
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

// TestRestoreAfterTreeStageRename: a snapshot names only the plan's own
// stages, never a combiner tree's stage, so a checkpoint taken while a
// tree stage had its old id ("ID/merge") restores into an engine whose
// tree stage has the new one ("ID/combine-tree"), with the combine that
// was in flight put back uncombined.
func TestRestoreAfterTreeStageRename(t *testing.T) {
	s := &script{}
	datadriven.RunTestFromString(t, `
pipeline
pcoll imp bytes
pcoll pre window=fixed(10)
pcoll grouped grouped window=fixed(10)
stage imp impulse out=imp
stage read sdk in=imp out=pre
stage gbk gbk in=pre out=grouped combine=1
stage down sdk in=grouped
----
ok
`, s.run)
	renameTreeStage(t, s, "gbk/combine-tree", "gbk/merge")
	datadriven.RunTestFromString(t, `
ready
----
bundle 1 stage=read
  ''@MIN

commit 1
output pre a:1@3 a:1@1 b:1@12
----
ok

ready
----
bundle 2 stage=gbk/merge
  a:[1,1]@9 [0,10)
bundle 3 stage=down
  b:[1]@19 [10,20) pane=ON_TIME,index=0,on-time-index=0,first,last

snapshot requeue-flight
----
ok
`, s.run)
	if bytes.Contains(s.snap, []byte("gbk/merge")) {
		t.Fatal("the snapshot holds the tree stage's id")
	}
	renameTreeStage(t, s, "gbk/merge", "gbk/combine-tree")
	datadriven.RunTestFromString(t, `
restore
----
ok

ready
----
bundle 4 stage=down
  b:[1]@19 [10,20) pane=ON_TIME,index=0,on-time-index=0,first,last
  a:[1,1]@9 [0,10) pane=ON_TIME,index=0,on-time-index=0,first,last
`, s.run)
}

// renameTreeStage gives a script pipeline's combiner tree stage another
// id, and the script a fresh engine for it unless it is to be restored.
func renameTreeStage(t *testing.T, s *script, from, to string) {
	t.Helper()
	found := false
	for i := range s.p.spec.Stages {
		if ss := &s.p.spec.Stages[i]; ss.TreeStage == from {
			ss.TreeStage, found = to, true
		}
	}
	tree, ok := s.p.trees[from]
	if !found || !ok {
		t.Fatalf("no tree stage %q", from)
	}
	delete(s.p.trees, from)
	tree.ID = to
	s.p.trees[to] = tree
	if s.snap == nil {
		eng, err := newEngineAPI(s.p.spec)
		if err != nil {
			t.Fatal(err)
		}
		s.eng, s.bundles = eng, map[int]*Bundle{}
	}
}
