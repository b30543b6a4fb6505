package plan

import (
	"github.com/beam-runner/beam-runner/testsupport/gopipe"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/textio"
	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/stagekind"
	"google.golang.org/protobuf/proto"
)

// customWords plans textio.Read | splitWords | GroupByKey-free consumer,
// with the words' coder a Go custom coder (what a registered coder gets)
// and the words' writer in an environment of language lang.
func customWords(t *testing.T, capability string) (*Plan, string) {
	t.Helper()
	p, s := beam.NewPipelineWithRoot()
	words := beam.ParDo(s, splitWords, textio.Read(s, "/tmp/x.txt"))
	beam.Reshuffle(s, words)
	pb := gopipe.ForTest(t, p)
	comps := pb.GetComponents()
	var wordsID string
	for id, tr := range comps.GetTransforms() {
		if strings.Contains(tr.GetUniqueName(), "splitWords") {
			for _, pc := range tr.GetOutputs() {
				wordsID = pc
			}
			_ = id
		}
	}
	comps.Coders["custom"] = &pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: "beam:go:coder:custom:v1", Payload: []byte("x")}}
	comps.GetPcollections()[wordsID].CoderId = "custom"
	for _, env := range comps.GetEnvironments() {
		env.Capabilities = []string{capability}
	}
	pl, err := Build(pb)
	if err != nil {
		t.Fatal(err)
	}
	return pl, wordsID
}

// A stage's SDK is told the coder it wrote for what its transforms output
// when it knows it (Java's schema'd outputs depend on the SchemaCoder
// itself), while the data plane, which the runner must parse, keeps the
// length-prefixed wire coder. An SDK of another language keeps the wire
// coder in the descriptor too.
func TestDescriptorKeepsTheSDKsOwnOutputCoders(t *testing.T) {
	for _, tc := range []struct {
		capability string
		own        bool
	}{
		{"beam:version:sdk_base:go:apache/beam_go_sdk:2.77.0", true},
		{"beam:version:sdk_base:apache/beam_python3.11_sdk:2.77.0", false},
	} {
		pl, words := customWords(t, tc.capability)
		found := false
		for _, st := range pl.Stages {
			if st.Kind != stagekind.SDK {
				continue
			}
			d, io, err := pl.Descriptor(st, "localhost:1")
			if err != nil {
				t.Fatal(err)
			}
			col, ok := d.GetPcollections()[words]
			if !ok || st.Inputs[0] == words {
				continue
			}
			found = true
			if got := col.GetCoderId() == "custom"; got != tc.own {
				t.Errorf("%s: descriptor gives words coder %q (%v), want own=%v", tc.capability, col.GetCoderId(), coderURNs(pl.Components.GetCoders(), col.GetCoderId()), tc.own)
			}
			for sink, pc := range io.Sinks {
				var port fnpb.RemoteGrpcPort
				proto.Unmarshal(d.GetTransforms()[sink].GetSpec().GetPayload(), &port)
				urns := strings.Join(coderURNs(pl.Components.GetCoders(), port.GetCoderId()), " ")
				if pc == words && !strings.Contains(urns, "beam:coder:length_prefix:v1 beam:go:coder:custom:v1") {
					t.Errorf("sink of words has coder %s, want the length-prefixed wire coder", urns)
				}
			}
		}
		if !found {
			t.Fatalf("no stage writes the words")
		}
	}
}
