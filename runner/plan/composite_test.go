package plan

import (
	"github.com/beam-runner/beam-runner/testsupport/gopipe"
	"os"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"
)

// pythonStreaming loads the proto Python submits for a --streaming job
// (testdata/python_streaming.py): PeriodicImpulse, fixed windows and a
// CombinePerKey, and a one-element Create. Its composites carry Python's
// own URN (beam:transform:pickled_python:v1), and the MaybeReshuffle of each
// one-element Create expanded to nothing: its output is its input.
func pythonStreaming(t *testing.T) *pipepb.Pipeline { return pipelineFixture(t, "python_streaming.pb") }

// pipelineFixture reads a pipeline proto from testdata (each has the
// Python program that wrote it next to it).
func pipelineFixture(t *testing.T, name string) *pipepb.Pipeline {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var p pipepb.Pipeline
	if err := proto.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	return &p
}

const urnPickled = "beam:transform:pickled_python:v1"

func TestPlansPythonStreamingComposites(t *testing.T) {
	p := pythonStreaming(t)
	var passThrough []string
	for id, tr := range p.GetComponents().GetTransforms() {
		if tr.GetSpec().GetUrn() == urnPickled && strings.HasSuffix(tr.GetUniqueName(), "MaybeReshuffle") {
			passThrough = append(passThrough, id)
		}
	}
	if len(passThrough) != 2 {
		t.Fatalf("fixture has %d pickled MaybeReshuffles, want 2: regenerate it?", len(passThrough))
	}
	pl, err := Build(p)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	planned := map[string]bool{}
	for _, st := range pl.Stages {
		for _, id := range st.Transforms {
			planned[id] = true
			if u := pl.Components.GetTransforms()[id].GetSpec().GetUrn(); u == urnPickled {
				t.Errorf("stage %s runs %s (%s): composites must be expanded", st.ID, id, u)
			}
		}
	}
	for _, id := range passThrough {
		if planned[id] {
			t.Errorf("pass-through %s is planned as a transform", id)
		}
	}
	// What the pass-throughs "output" is read downstream, from the
	// transform that really produces it.
	for _, id := range passThrough {
		pc, _ := onlyValue(p.GetComponents().GetTransforms()[id].GetOutputs())
		if producerOf(pl, pc) == "" {
			t.Errorf("PCollection %s of %s has no producing leaf", pc, id)
		}
	}
}

func producerOf(pl *Plan, pc string) string {
	for _, st := range pl.Stages {
		for _, id := range st.Transforms {
			for _, out := range pl.Components.GetTransforms()[id].GetOutputs() {
				if out == pc {
					return id
				}
			}
		}
	}
	return ""
}

// A composite is expanded whatever its URN, even one the runner knows
// nothing of; only a primitive (no subtransforms) with an unknown URN is
// refused.
func TestExpandsCompositesOfAnyURN(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	beam.ParDo(s, splitWords, beam.Create(s.Scope("Outer"), "a b"))
	pb := gopipe.ForTest(t, p)
	var composite string
	for id, tr := range pb.GetComponents().GetTransforms() {
		if len(tr.GetSubtransforms()) > 0 && tr.GetUniqueName() == "Outer" {
			tr.Spec = &pipepb.FunctionSpec{Urn: "beam:transform:made_up_composite:v1"}
			composite = id
		}
	}
	if composite == "" {
		t.Fatal("no composite named Outer in the Go pipeline")
	}
	if _, err := Build(pb); err != nil {
		t.Fatalf("Build with an unknown composite URN: %v", err)
	}
	// The same transform with its parts removed is an unknown primitive.
	tr := pb.GetComponents().GetTransforms()[composite]
	tr.Subtransforms = nil
	tr.Outputs = map[string]string{"o": firstOutputOf(pb, composite)}
	_, err := Build(pb)
	if err == nil || !strings.Contains(err.Error(), "made_up_composite") || !strings.Contains(err.Error(), "Outer") {
		t.Fatalf("Build error = %v, want one naming the transform and its URN", err)
	}
}

// firstOutputOf returns an output PCollection of the composite's parts.
func firstOutputOf(pb *pipepb.Pipeline, composite string) string {
	ts := pb.GetComponents().GetTransforms()
	for _, sub := range ts[composite].GetSubtransforms() {
		for _, pc := range ts[sub].GetOutputs() {
			return pc
		}
	}
	return ""
}

// A transform with no outputs is never mistaken for a pass-through: an
// unknown one may be a primitive run for its effects.
func TestRefusesUnknownSinkPrimitive(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	words := beam.Create(s, "a")
	beam.ParDo0(s, func(string) {}, words)
	pb := gopipe.ForTest(t, p)
	for _, tr := range pb.GetComponents().GetTransforms() {
		if tr.GetSpec().GetUrn() == URNParDo && len(tr.GetOutputs()) == 0 && len(tr.GetSubtransforms()) == 0 {
			tr.Spec = &pipepb.FunctionSpec{Urn: "beam:transform:made_up_sink:v1"}
		}
	}
	if _, err := Build(pb); err == nil || !strings.Contains(err.Error(), "made_up_sink") {
		t.Fatalf("Build error = %v, want one naming the URN", err)
	}
}
