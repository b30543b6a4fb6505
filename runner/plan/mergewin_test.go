package plan

import (
	"strings"
	"testing"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/runner/stagekind"
	"google.golang.org/protobuf/proto"
)

func pythonCustomWindows(t *testing.T) *pipepb.Pipeline {
	return pipelineFixture(t, "python_custom_windows.pb")
}

// gbkStage finds the GroupByKey stage of the transform named name.
func gbkStage(t *testing.T, pl *Plan, name string) *Stage {
	t.Helper()
	for _, s := range pl.Stages {
		if s.Kind == stagekind.GBK && pl.Components.GetTransforms()[s.Transforms[0]].GetUniqueName() == name {
			return s
		}
	}
	t.Fatalf("no GroupByKey stage %q", name)
	return nil
}

func windowCoderOf(t *testing.T, pl *Plan, pc string) *pipepb.Coder {
	t.Helper()
	wv := pl.Components.GetCoders()[pl.Wire[pc]]
	return pl.Components.GetCoders()[wv.GetComponentCoderIds()[1]]
}

// TestPlansCustomWindows: a custom merging WindowFn gets a merge stage in
// its SDK's environment running merge_windows with the WindowFn's spec; a
// custom window type's coder becomes custom_window around it, in the
// windowing strategy too, and needs no merging.
func TestPlansCustomWindows(t *testing.T) {
	pl, err := Build(pythonCustomWindows(t))
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	merging := gbkStage(t, pl, "merging/GBK")
	if merging.WindowMergeStage == "" {
		t.Fatal("the custom merging GroupByKey has no merge stage")
	}
	var ms *Stage
	for _, s := range pl.Stages {
		if s.ID == merging.WindowMergeStage {
			ms = s
		}
	}
	if ms == nil || ms.Kind != stagekind.SDK || len(ms.Transforms) != 1 {
		t.Fatalf("merge stage %q: %+v", merging.WindowMergeStage, ms)
	}
	mt := pl.Components.GetTransforms()[ms.Transforms[0]]
	var fn pipepb.FunctionSpec
	if err := proto.Unmarshal(mt.GetSpec().GetPayload(), &fn); err != nil || mt.GetSpec().GetUrn() != URNMergeWindows {
		t.Fatalf("merge transform %s: payload %v", mt.GetSpec().GetUrn(), err)
	}
	if !proto.Equal(&fn, merging.Windowing.GetWindowFn()) || ms.Env != merging.Windowing.GetEnvironmentId() || ms.Env == "" {
		t.Errorf("merge stage runs %v in %q, want the GBK's window fn in %q", fn.GetUrn(), ms.Env, merging.Windowing.GetEnvironmentId())
	}
	if got := windowCoderOf(t, pl, ms.Inputs[0]); got.GetSpec().GetUrn() != coders.URNGlobalWindow {
		t.Errorf("merge requests' windows: %s, want the global window", got.GetSpec().GetUrn())
	}
	if pl.Consumers[ms.Inputs[0]] != 1 {
		t.Errorf("merge requests have %d consumers, want 1", pl.Consumers[ms.Inputs[0]])
	}
	if _, err := coders.CompileWindowedValue(pl.Components.GetCoders(), pl.Wire[ms.Outputs[0]]); err != nil {
		t.Errorf("merge answers' coder does not compile: %v", err)
	}

	evenOdd := gbkStage(t, pl, "evenodd/GBK")
	if evenOdd.WindowMergeStage != "" {
		t.Error("a non-merging custom WindowFn got a merge stage")
	}
	wc := windowCoderOf(t, pl, evenOdd.Inputs[0])
	if wc.GetSpec().GetUrn() != coders.URNCustomWindow {
		t.Fatalf("custom window type's wire coder %s, want %s", wc.GetSpec().GetUrn(), coders.URNCustomWindow)
	}
	inner := pl.Components.GetCoders()[wc.GetComponentCoderIds()[0]]
	if inner.GetSpec().GetUrn() != coders.URNLengthPrefix {
		t.Errorf("the SDK's window coder inside custom_window is %s, want it length-prefixed", inner.GetSpec().GetUrn())
	}
	if evenOdd.Windowing.GetWindowCoderId() != wc.GetComponentCoderIds()[0] && pl.Components.GetCoders()[evenOdd.Windowing.GetWindowCoderId()].GetSpec().GetUrn() != coders.URNCustomWindow {
		t.Errorf("windowing strategy's window coder %q was not rewritten to custom_window", evenOdd.Windowing.GetWindowCoderId())
	}
	wv, err := coders.CompileWindowedValue(pl.Components.GetCoders(), pl.Wire[evenOdd.Inputs[0]])
	if err != nil || wv.WindowKind() != coders.CustomWindows {
		t.Errorf("custom window type compiles to kind %v (%v), want CustomWindows", wv.WindowKind(), err)
	}
}

// TestCustomMergingNeedsItsSDK: a merging WindowFn only an SDK can merge is
// refused, by name, when its windowing strategy names no environment.
func TestCustomMergingNeedsItsSDK(t *testing.T) {
	p := pythonCustomWindows(t)
	for _, ws := range p.GetComponents().GetWindowingStrategies() {
		if ws.GetMergeStatus() == pipepb.MergeStatus_NEEDS_MERGE {
			ws.EnvironmentId = ""
		}
	}
	_, err := Build(p)
	if err == nil || !strings.Contains(err.Error(), "merging/GBK") || !strings.Contains(err.Error(), "merges windows") {
		t.Errorf("Build: %v, want an error naming the GroupByKey and the merge", err)
	}
}
