package plan

import (
	"github.com/beam-runner/beam-runner/testsupport/gopipe"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"
	"google.golang.org/protobuf/proto"

	"github.com/beam-runner/beam-runner/runner/stagekind"
)

// TestLiftedCombineTreeStage: the GroupByKey of a lifted combine names
// its Merge, and the merge stage built for it runs that Merge alone,
// reading the GroupByKey's output coding and writing its input's, so
// what it writes goes back into the GroupByKey as it came.
func TestLiftedCombineTreeStage(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	words := beam.ParDo(s, splitWords, beam.Create(s, "a b a"))
	stats.Count(s, words)
	pl, err := Build(gopipe.ForTest(t, p))
	if err != nil {
		t.Fatal(err)
	}
	var gbk *Stage
	for _, st := range pl.Stages {
		if st.Kind == stagekind.GBK {
			gbk = st
		}
	}
	if gbk == nil || gbk.TreeTransform == "" {
		t.Fatalf("the lifted combine's GroupByKey names no Merge: %+v", gbk)
	}
	ms, err := pl.TreeStage(gbk)
	if err != nil {
		t.Fatal(err)
	}
	if ms.ID != gbk.ID+"/combine-tree" || len(ms.Transforms) != 1 || pl.Components.GetTransforms()[ms.Transforms[0]].GetSpec().GetUrn() != URNMergeAccum {
		t.Fatalf("merge stage %+v does not run the Merge alone", ms)
	}
	d, io, err := pl.Descriptor(ms, "localhost:2")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := portCoder(t, d, io.Source), pl.Wire[gbk.Outputs[0]]; got != want {
		t.Errorf("merge stage reads %s, the GroupByKey writes %s", got, want)
	}
	if len(io.Sinks) != 1 {
		t.Fatalf("merge stage sinks %v, want one", io.Sinks)
	}
	for sink := range io.Sinks {
		if got, want := portCoder(t, d, sink), pl.Wire[gbk.Inputs[0]]; got != want {
			t.Errorf("merge stage writes %s, the GroupByKey reads %s", got, want)
		}
	}
	// A GroupByKey of no lifted combine has no merge stage.
	if _, err := pl.TreeStage(&Stage{ID: "x", Kind: stagekind.GBK}); err == nil {
		t.Error("merge stage of a plain GroupByKey: want an error")
	}
}

func portCoder(t *testing.T, d *fnpb.ProcessBundleDescriptor, id string) string {
	t.Helper()
	var port fnpb.RemoteGrpcPort
	if err := proto.Unmarshal(d.GetTransforms()[id].GetSpec().GetPayload(), &port); err != nil {
		t.Fatalf("port %s: %v", id, err)
	}
	return port.GetCoderId()
}

// TestEarliestUnboundedNotLifted: a combine of unbounded input whose
// windowing outputs at the earliest timestamp keeps its GroupByKey plain
// (a precombined accumulator would carry only the earliest timestamp of
// its elements, some of which may be behind the watermark); bounded input
// is lifted whatever its output time.
func TestEarliestUnboundedNotLifted(t *testing.T) {
	for _, tc := range []struct {
		bounded pipepb.IsBounded_Enum
		out     pipepb.OutputTime_Enum
		lifted  bool
	}{
		{pipepb.IsBounded_UNBOUNDED, pipepb.OutputTime_EARLIEST_IN_PANE, false},
		{pipepb.IsBounded_UNBOUNDED, pipepb.OutputTime_LATEST_IN_PANE, true},
		{pipepb.IsBounded_UNBOUNDED, pipepb.OutputTime_END_OF_WINDOW, true},
		{pipepb.IsBounded_BOUNDED, pipepb.OutputTime_EARLIEST_IN_PANE, true},
	} {
		p, s := beam.NewPipelineWithRoot()
		words := beam.ParDo(s, splitWords, beam.Create(s, "a b a"))
		stats.Count(s, words)
		pp := gopipe.ForTest(t, p)
		for _, pc := range pp.GetComponents().GetPcollections() {
			pc.IsBounded = tc.bounded
		}
		for _, ws := range pp.GetComponents().GetWindowingStrategies() {
			ws.OutputTime = tc.out
		}
		pl, err := Build(pp)
		if err != nil {
			t.Fatal(err)
		}
		lifted := false
		for _, st := range pl.Stages {
			if st.Kind == stagekind.GBK && st.TreeTransform != "" {
				lifted = true
			}
		}
		if lifted != tc.lifted {
			t.Errorf("%v input, output time %v: lifted %v, want %v", tc.bounded, tc.out, lifted, tc.lifted)
		}
	}
}
