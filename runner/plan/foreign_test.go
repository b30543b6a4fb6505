package plan

import (
	"github.com/beam-runner/beam-runner/testsupport/gopipe"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/textio"
	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"
	"github.com/beam-runner/beam-runner/runner/stagekind"
	"google.golang.org/protobuf/proto"
)

// coderURNs lists every coder URN in id's tree.
func coderURNs(m map[string]*pipepb.Coder, id string) []string {
	c := m[id]
	out := []string{c.GetSpec().GetUrn()}
	for _, sub := range c.GetComponentCoderIds() {
		out = append(out, coderURNs(m, sub)...)
	}
	return out
}

// A Python stage reading a Go stage's output whose key is a Go custom
// coder reads it as length-prefixed bytes; Go stages keep the coder.
func TestForeignCoderReadAsBytes(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	words := beam.ParDo(s, splitWords, textio.Read(s, "/tmp/x.txt"))
	_ = stats.Count(s, words)
	pb := gopipe.ForTest(t, p)
	comps := pb.GetComponents()
	// The words' coder becomes a Go custom coder (what a Go type with a
	// registered coder gets), and the combine moves to a Python
	// environment.
	for _, pc := range comps.GetPcollections() {
		if c := comps.GetCoders()[pc.GetCoderId()]; c.GetSpec().GetUrn() == "beam:coder:kv:v1" {
			key := c.GetComponentCoderIds()[0]
			if comps.GetCoders()[key].GetSpec().GetUrn() == "beam:coder:string_utf8:v1" {
				comps.Coders[key] = &pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: "beam:go:coder:custom:v1", Payload: []byte("x")}}
			}
		}
	}
	var goEnv string
	for id := range comps.GetEnvironments() {
		goEnv = id
	}
	py := proto.Clone(comps.GetEnvironments()[goEnv]).(*pipepb.Environment)
	py.Capabilities = []string{"beam:version:sdk_base:apache/beam_python3.11_sdk:2.77.0", "beam:coder:bytes:v1"}
	comps.Environments["py"] = py
	for _, tr := range comps.GetTransforms() {
		if tr.GetSpec().GetUrn() == "beam:transform:combine_per_key:v1" {
			tr.EnvironmentId = "py"
		}
	}
	pl, err := Build(pb)
	if err != nil {
		t.Fatal(err)
	}
	var sawPy bool
	for _, st := range pl.Stages {
		if st.Kind != stagekind.SDK {
			continue
		}
		d, _, err := pl.Descriptor(st, "localhost:1")
		if err != nil {
			t.Fatal(err)
		}
		var src fnpb.RemoteGrpcPort
		proto.Unmarshal(d.GetTransforms()[st.ID+"/source"].GetSpec().GetPayload(), &src)
		urns := strings.Join(coderURNs(pl.Components.GetCoders(), src.GetCoderId()), " ")
		pcURNs := strings.Join(coderURNs(pl.Components.GetCoders(), d.GetPcollections()[st.Inputs[0]].GetCoderId()), " ")
		if st.Env == "py" {
			sawPy = true
			if strings.Contains(urns+pcURNs, "beam:go:") || !strings.Contains(urns, "beam:coder:length_prefix:v1 beam:coder:bytes:v1") {
				t.Errorf("Python stage %s reads with %s (PCollection %s)", st.ID, urns, pcURNs)
			}
			// Both rewrites apply to the combine's grouped accumulators.
			if groupedOutputs(pl)[st.Inputs[0]] != "" && !strings.Contains(urns, URNStateBackedIterable) {
				t.Errorf("Python stage %s reads grouped values with %s, not state-backed", st.ID, urns)
			}
		} else if len(st.InputCoders) > 0 {
			t.Errorf("Go stage %s got input coders %v", st.ID, st.InputCoders)
		}
	}
	if !sawPy {
		t.Fatal("no stage runs in the Python environment")
	}
}
