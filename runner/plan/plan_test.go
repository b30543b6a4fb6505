package plan

import (
	"github.com/beam-runner/beam-runner/testsupport/gopipe"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/local"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/textio"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/teststream"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"
	"google.golang.org/protobuf/proto"

	"github.com/beam-runner/beam-runner/runner/stagekind"
)

func init() {
	beam.RegisterFunction(splitWords)
	beam.RegisterFunction(withSide)
}

func splitWords(line string, emit func(string)) {
	for _, w := range strings.Fields(line) {
		emit(w)
	}
}

func withSide(w string, side []int, emit func(string)) { emit(w) }

func TestBuildWordCount(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	lines := textio.Read(s, "/tmp/does-not-matter.txt")
	words := beam.ParDo(s, splitWords, lines)
	counts := stats.Count(s, words)
	_ = counts
	pl, err := Build(gopipe.ForTest(t, p))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[stagekind.Kind]int{}
	for _, st := range pl.Stages {
		kinds[st.Kind]++
		if st.Kind == stagekind.SDK && len(st.Inputs) != 1 {
			t.Errorf("SDK stage %s has inputs %v", st.ID, st.Inputs)
		}
		if st.Kind == stagekind.SDK {
			if _, _, err := pl.Descriptor(st, "localhost:2"); err != nil {
				t.Errorf("descriptor of %s: %v", st.ID, err)
			}
		}
	}
	if kinds[stagekind.Impulse] != 1 || kinds[stagekind.GBK] < 1 {
		t.Errorf("stage kinds = %v, want one impulse and a GBK", kinds)
	}
	// The lifted combine runs precombine before the GBK and merge after it.
	var sawPre, sawMerge bool
	for _, st := range pl.Stages {
		for _, id := range st.Transforms {
			switch pl.Components.GetTransforms()[id].GetSpec().GetUrn() {
			case URNPreCombine:
				sawPre = true
			case URNMergeAccum:
				sawMerge = true
			}
		}
	}
	if !sawPre || !sawMerge {
		t.Errorf("combine not lifted: precombine %v merge %v", sawPre, sawMerge)
	}
}

func TestSideInputBreaksFusion(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	words := beam.Create(s, "a", "b")
	nums := beam.Create(s, 1, 2)
	out := beam.ParDo(s, withSide, words, beam.SideInput{Input: nums})
	_ = out
	pl, err := Build(gopipe.ForTest(t, p))
	if err != nil {
		t.Fatal(err)
	}
	var consumer *Stage
	for _, st := range pl.Stages {
		if len(st.SideInputs) > 0 {
			consumer = st
		}
	}
	if consumer == nil {
		t.Fatal("no stage reads the side input")
	}
	if len(consumer.Deps) == 0 {
		t.Errorf("side-input stage %s has no dependencies", consumer.ID)
	}
	if pl.Consumers[consumer.SideInputs[0].PColl] == 0 {
		t.Errorf("side input PCollection is not counted as consumed")
	}
}

func TestRejectsUnknownURN(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	beam.Create(s, "a")
	pb := gopipe.ForTest(t, p)
	for id, tr := range pb.GetComponents().GetTransforms() {
		if tr.GetSpec().GetUrn() == URNImpulse {
			tr.Spec.Urn = "beam:transform:made_up:v1"
			_ = id
		}
	}
	_, err := Build(pb)
	if err == nil || !strings.Contains(err.Error(), "beam:transform:made_up:v1") {
		t.Fatalf("Build error = %v, want one naming the URN", err)
	}
}

func TestRejectsUnknownRequirement(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	beam.Create(s, "a")
	pb := gopipe.ForTest(t, p)
	pb.Requirements = append(pb.Requirements, "beam:requirement:made_up:v1")
	if _, err := Build(pb); err == nil || !strings.Contains(err.Error(), "made_up") {
		t.Fatalf("Build error = %v, want one naming the requirement", err)
	}
}

// Malformed runner transforms are rejected at planning, never a panic later.
func TestRejectsGBKWithoutOutput(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	beam.GroupByKey(s, beam.ParDo(s, func(x string) (string, int) { return x, 1 }, beam.Create(s, "a")))
	pb := gopipe.ForTest(t, p)
	for _, tr := range pb.GetComponents().GetTransforms() {
		if tr.GetSpec().GetUrn() == URNGBK {
			tr.Outputs = nil
		}
	}
	if _, err := Build(pb); err == nil || !strings.Contains(err.Error(), "exactly one output") {
		t.Fatalf("Build error = %v, want one about the GroupByKey's outputs", err)
	}
}

// flattenOfImpulses plans Flatten(Impulse, Impulse), with the flatten's
// output coder replaced by a UTF-8 string coder when recode is set.
func flattenOfImpulses(t *testing.T, recode bool) *Plan {
	t.Helper()
	p, s := beam.NewPipelineWithRoot()
	beam.ParDo0(s, func([]byte) {}, beam.Flatten(s, beam.Impulse(s), beam.Impulse(s)))
	pb := gopipe.ForTest(t, p)
	for _, tr := range pb.GetComponents().GetTransforms() {
		if tr.GetSpec().GetUrn() == URNFlatten && recode {
			out, _ := onlyValue(tr.GetOutputs())
			pb.Components.Coders["utf8"] = &pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: "beam:coder:string_utf8:v1"}}
			pb.Components.Pcollections[out].CoderId = "utf8"
		}
	}
	pl, err := Build(pb)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return pl
}

// A flatten input from a runner stage whose coder differs from the
// flatten output's is re-encoded by the SDK (a one-input flatten in an SDK
// stage writing into the flatten's output); with equal coders the runner
// copies bytes.
func TestFlattenTranscodesRunnerInputs(t *testing.T) {
	for _, recode := range []bool{false, true} {
		pl := flattenOfImpulses(t, recode)
		var flat *Stage
		sinks := 0
		for _, st := range pl.Stages {
			if st.Kind == stagekind.Flatten {
				flat = st
			}
			sinks += len(st.FlattenSinks)
		}
		if flat == nil {
			t.Fatal("no flatten stage")
		}
		wantCopy, wantSinks := 2, 0
		if recode {
			wantCopy, wantSinks = 0, 2
		}
		if len(flat.CopyInputs) != wantCopy || sinks != wantSinks {
			t.Errorf("recode=%v: flatten copies %d inputs and SDK stages sink %d, want %d and %d",
				recode, len(flat.CopyInputs), sinks, wantCopy, wantSinks)
		}
	}
}

// testStreamPipeline plans a Go TestStream of strings into a ParDo; with
// python set, its environment loses the Go SDK capability and the payload
// names a bytes coder, as Python's TestStream(coder=...) does.
func testStreamPipeline(t *testing.T, python bool) (*Plan, *pipepb.Pipeline) {
	t.Helper()
	p, s := beam.NewPipelineWithRoot()
	con := teststream.NewConfig()
	con.AddElements(1000, "x")
	beam.ParDo0(s, func(string) {}, teststream.Create(s, con))
	pb := gopipe.ForTest(t, p)
	if python {
		for _, env := range pb.GetComponents().GetEnvironments() {
			env.Capabilities = nil
		}
		for _, tr := range pb.GetComponents().GetTransforms() {
			if tr.GetSpec().GetUrn() == URNTestStreamGo {
				var pl pipepb.TestStreamPayload
				if err := proto.Unmarshal(tr.GetSpec().GetPayload(), &pl); err != nil {
					t.Fatal(err)
				}
				pb.Components.Coders["payload"] = &pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: "beam:coder:bytes:v1"}}
				pl.CoderId = "payload"
				tr.Spec.Payload, _ = proto.Marshal(&pl)
			}
		}
	}
	pl, err := Build(pb)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return pl, pb
}

// A TestStream whose payload coder is not its output's (Python's
// TestStream(coder=...)) writes a PCollection of the payload's coder, which
// an SDK flatten re-encodes into the output; the Go SDK's, whose payload
// names an unrelated coder, is left alone.
func TestTestStreamPayloadCoderTranscoded(t *testing.T) {
	for _, python := range []bool{false, true} {
		pl, pb := testStreamPipeline(t, python)
		var ts *Stage
		transcodes := 0
		for _, st := range pl.Stages {
			if st.Kind == stagekind.TestStream {
				ts = st
			}
			for _, id := range st.Transforms {
				if st.Kind == stagekind.SDK && pl.Components.GetTransforms()[id].GetSpec().GetUrn() == URNFlatten {
					transcodes++
				}
			}
		}
		tr := pl.Components.GetTransforms()[ts.Transforms[0]]
		if got := GoTestStream(pb.GetComponents(), tr); got == python {
			t.Errorf("python=%v: GoTestStream = %v", python, got)
		}
		out, _ := onlyValue(tr.GetOutputs())
		coder := pl.SDKCoder[out]
		if want := map[bool]int{false: 0, true: 1}[python]; transcodes != want {
			t.Errorf("python=%v: %d transcoding flattens, want %d", python, transcodes, want)
		}
		if python && coder != "payload" {
			t.Errorf("TestStream output has coder %q, want the payload's", coder)
		}
	}
}

// A pipeline without transforms is valid Beam (Java's
// PipelineTest#testEmptyPipeline): it plans to no stages, not an error.
func TestEmptyPipelinePlansNoStages(t *testing.T) {
	for name, p := range map[string]*pipepb.Pipeline{
		"no components":    {},
		"empty components": {Components: &pipepb.Components{}},
	} {
		pl, err := Build(p)
		if err != nil {
			t.Errorf("%s: Build = %v, want a plan", name, err)
			continue
		}
		if len(pl.Stages) != 0 {
			t.Errorf("%s: %d stages, want none", name, len(pl.Stages))
		}
	}
}
