package spec

import (
	"bytes"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/teststream"
	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/runner/engine"
	"github.com/beam-runner/beam-runner/runner/plan"
	"github.com/beam-runner/beam-runner/runner/stagekind"
	"github.com/beam-runner/beam-runner/testsupport/gopipe"
	"google.golang.org/protobuf/proto"
)

// A Java or Python TestStream of KV<K, V> whose key coder the runner does
// not know (Java's KV<Void, String>) cannot be split into key and value by
// the runner: its elements cross whole, each the inner value of a length
// prefix (how Java and Python nest it), into an SDK flatten that writes the
// output with the wire coder, where the key is wrapped. The job is not
// refused.
func TestTestStreamUnknownKeyCrossesWhole(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	con := teststream.NewConfig()
	con.AddElements(1000, "x")
	beam.ParDo0(s, func(string) {}, teststream.Create(s, con))
	pb := gopipe.ForTest(t, p)
	elem := []byte("\x05abc") // key "" under the unknown coder, then the outer string "\x05abc"
	for _, env := range pb.GetComponents().GetEnvironments() {
		env.Capabilities = nil // not the Go SDK: elements are outer-encoded
	}
	cs := pb.GetComponents().GetCoders()
	cs["void"] = &pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: "beam:coders:javasdk:0.1"}}
	cs["str"] = &pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: coders.URNStringUTF8}}
	cs["payload"] = &pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: coders.URNKV}, ComponentCoderIds: []string{"void", "str"}}
	for _, tr := range pb.GetComponents().GetTransforms() {
		if tr.GetSpec().GetUrn() == plan.URNTestStreamGo {
			var pl pipepb.TestStreamPayload
			if err := proto.Unmarshal(tr.GetSpec().GetPayload(), &pl); err != nil {
				t.Fatal(err)
			}
			pl.CoderId = "payload"
			pl.Events[0].GetElementEvent().Elements[0].EncodedElement = elem
			tr.Spec.Payload, _ = proto.Marshal(&pl)
		}
	}
	pl, err := plan.Build(pb)
	if err != nil {
		t.Fatalf("Build = %v, want the TestStream planned", err)
	}
	spec, err := Build(pl, Config{Parallelism: 1, MaxAttempts: 1})
	if err != nil {
		t.Fatalf("spec.Build = %v, want the TestStream's events read", err)
	}
	ts := onlyStage(t, spec, stagekind.TestStream)
	var got []byte
	for _, ev := range ts.Events {
		if ev.Kind == engine.AddElements {
			got = ev.Elements
		}
	}
	want := coders.AppendWindowedValue(nil, 1000, 1, nil, coders.NoFiringPane, coders.AppendLengthPrefixed(nil, elem))
	if !bytes.Equal(got, want) {
		t.Errorf("TestStream elements %x, want the whole element length-prefixed %x", got, want)
	}
	out := pl.Components.GetPcollections()[ts.Outputs[0]]
	c := pl.Components.GetCoders()[out.GetCoderId()]
	if c.GetSpec().GetUrn() != coders.URNLengthPrefix || c.GetComponentCoderIds()[0] != "payload" {
		t.Errorf("TestStream writes coder %v, want a length prefix around the payload's", c)
	}
	transcodes := 0
	for _, st := range pl.Stages {
		for _, id := range st.Transforms {
			if st.Kind == stagekind.SDK && pl.Components.GetTransforms()[id].GetSpec().GetUrn() == plan.URNFlatten {
				transcodes++
			}
		}
	}
	if transcodes != 1 {
		t.Errorf("%d transcoding flattens, want 1", transcodes)
	}
}
