package plan

import (
	"github.com/beam-runner/beam-runner/testsupport/gopipe"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/textio"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"

	"github.com/beam-runner/beam-runner/runner/stagekind"
)

func init() {
	beam.RegisterFunction(randomKey)
	beam.RegisterFunction(writeOnce)
}

// randomKey is nondeterministic: run twice on one element, it emits
// different keys, which is what a stable-input DoFn must never see.
func randomKey(_ []byte, emit func(int64, string)) { emit(rand.Int64(), "v") }

func writeOnce(k int64, v string, emit func(string)) { emit(v) }

// stablePipeline is Impulse → RandomKey → WriteOnce → GBK → AfterGBK, with
// requires_stable_input set, as Java's ParDoTranslation sets it for a
// @RequiresStableInput DoFn, on the ParDos named in stable.
func stablePipeline(t *testing.T, stable ...string) *pipepb.Pipeline {
	t.Helper()
	p, s := beam.NewPipelineWithRoot()
	keyed := beam.ParDo(s.Scope("RandomKey"), randomKey, beam.Impulse(s))
	written := beam.ParDo(s.Scope("WriteOnce"), writeOnce, keyed)
	grouped := beam.GroupByKey(s, beam.AddFixedKey(s, written))
	beam.ParDo(s.Scope("AfterGBK"), func(_ int, vs func(*string) bool, emit func(string)) {}, grouped)
	pb := gopipe.ForTest(t, p)
	setStable(t, pb, stable...)
	return pb
}

// setStable sets requires_stable_input on the leaf ParDos under the named
// composites.
func setStable(t *testing.T, pb *pipepb.Pipeline, names ...string) {
	t.Helper()
	for _, name := range names {
		id := leafUnder(t, pb, name)
		tr := pb.GetComponents().GetTransforms()[id]
		var pl pipepb.ParDoPayload
		if err := proto.Unmarshal(tr.GetSpec().GetPayload(), &pl); err != nil {
			t.Fatal(err)
		}
		pl.RequiresStableInput = true
		b, err := proto.Marshal(&pl)
		if err != nil {
			t.Fatal(err)
		}
		tr.Spec.Payload = b
	}
}

// leafUnder returns the id of the one ParDo leaf below the composite with
// the given unique name.
func leafUnder(t *testing.T, pb *pipepb.Pipeline, name string) string {
	t.Helper()
	for _, tr := range pb.GetComponents().GetTransforms() {
		if tr.GetUniqueName() != name {
			continue
		}
		for _, sub := range tr.GetSubtransforms() {
			if pb.GetComponents().GetTransforms()[sub].GetSpec().GetUrn() == URNParDo {
				return sub
			}
		}
	}
	t.Fatalf("no ParDo under %q", name)
	return ""
}

func stageHolding(pl *Plan, id string) *Stage {
	for _, st := range pl.Stages {
		if slices.Contains(st.Transforms, id) {
			return st
		}
	}
	return nil
}

func TestStableInputBreaksFusion(t *testing.T) {
	for _, tc := range []struct {
		stable   []string
		wantFuse bool
	}{{nil, true}, {[]string{"WriteOnce"}, false}} {
		pb := stablePipeline(t, tc.stable...)
		pl, err := Build(pb)
		if err != nil {
			t.Fatal(err)
		}
		random, stable := leafUnder(t, pb, "RandomKey"), leafUnder(t, pb, "WriteOnce")
		rs, ss := stageHolding(pl, random), stageHolding(pl, stable)
		if pl.StableInput(ss) == tc.wantFuse || pl.StableInput(rs) {
			t.Errorf("stable=%v: StableInput of RandomKey's stage %v, of WriteOnce's %v", tc.stable, pl.StableInput(rs), pl.StableInput(ss))
		}
		if (rs == ss) != tc.wantFuse {
			t.Fatalf("stable=%v: RandomKey in %s %v, WriteOnce in %s %v; want fused=%v", tc.stable, rs.ID, rs.Transforms, ss.ID, ss.Transforms, tc.wantFuse)
		}
		if tc.wantFuse {
			continue
		}
		// The stable DoFn heads its stage and reads what RandomKey's stage
		// materialises, after that stage.
		in := onlyOutput(t, pb, random)
		if ss.Transforms[0] != stable || !slices.Equal(ss.Inputs, []string{in}) || ss.Kind != stagekind.SDK {
			t.Errorf("stable stage %s: transforms %v inputs %v, want to start with %s reading %s", ss.ID, ss.Transforms, ss.Inputs, stable, in)
		}
		if !slices.Contains(rs.Outputs, in) || !slices.Contains(ss.Deps, rs.ID) {
			t.Errorf("stage %s outputs %v, stable stage deps %v: want %s materialised by %s", rs.ID, rs.Outputs, ss.Deps, in, rs.ID)
		}
	}
}

func onlyOutput(t *testing.T, pb *pipepb.Pipeline, id string) string {
	t.Helper()
	out, ok := onlyValue(pb.GetComponents().GetTransforms()[id].GetOutputs())
	if !ok {
		t.Fatalf("transform %s has not one output", id)
	}
	return out
}

// A stable DoFn right after a GroupByKey already reads a materialised
// PCollection: no stage is added.
func TestStableInputAfterGBKNeedsNoBreak(t *testing.T) {
	plain, err := Build(stablePipeline(t))
	if err != nil {
		t.Fatal(err)
	}
	pb := stablePipeline(t, "AfterGBK")
	stable, err := Build(pb)
	if err != nil {
		t.Fatal(err)
	}
	if len(stable.Stages) != len(plain.Stages) {
		t.Errorf("%d stages with a stable DoFn after the GBK, %d without", len(stable.Stages), len(plain.Stages))
	}
	st := stageHolding(stable, leafUnder(t, pb, "AfterGBK"))
	if st.Transforms[0] != leafUnder(t, pb, "AfterGBK") {
		t.Errorf("stage %s %v does not start with the stable DoFn", st.ID, st.Transforms)
	}
}

// A splittable DoFn that requires stable input breaks before its
// PairWithRestriction, the step that reads the element.
func TestStableInputSplittable(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	textio.Read(s, "/tmp/does-not-matter.txt")
	pb := gopipe.ForTest(t, p)
	var sdf string
	for id, tr := range pb.GetComponents().GetTransforms() {
		var pl pipepb.ParDoPayload
		if tr.GetSpec().GetUrn() == URNParDo && proto.Unmarshal(tr.GetSpec().GetPayload(), &pl) == nil && pl.GetRestrictionCoderId() != "" {
			sdf = id
			pl.RequiresStableInput = true
			tr.Spec.Payload, _ = proto.Marshal(&pl)
		}
	}
	if sdf == "" {
		t.Fatal("textio.Read has no splittable ParDo")
	}
	pl, err := Build(pb)
	if err != nil {
		t.Fatal(err)
	}
	pairs := 0
	for _, st := range pl.Stages {
		for i, id := range st.Transforms {
			if pl.Components.GetTransforms()[id].GetSpec().GetUrn() != URNPairWithRestr {
				continue
			}
			pairs++
			if i != 0 {
				t.Errorf("stage %s %v: PairWithRestriction %s of a stable SDF is fused behind %v", st.ID, st.Transforms, id, st.Transforms[:i])
			}
		}
	}
	if pairs != 1 {
		t.Errorf("%d PairWithRestriction steps planned, want 1", pairs)
	}
}
