package plan

import (
	"github.com/beam-runner/beam-runner/testsupport/gopipe"
	"slices"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"
	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/runner/stagekind"
	"google.golang.org/protobuf/proto"
)

// pythonGBK plans the batch Python pipeline of testdata/python_gbk.py.
func pythonGBK(t *testing.T) *Plan {
	t.Helper()
	pl, err := Build(pipelineFixture(t, "python_gbk.pb"))
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

// groupedOutputs maps each GroupByKey's output to its transform's name.
func groupedOutputs(pl *Plan) map[string]string {
	out := map[string]string{}
	for _, s := range pl.Stages {
		if s.Kind == stagekind.GBK {
			out[s.Outputs[0]] = pl.Components.GetTransforms()[s.Transforms[0]].GetUniqueName()
		}
	}
	return out
}

// sourceCoder is the coder of an SDK stage's data source, and the coder
// its descriptor gives the main input PCollection.
func sourceCoder(t *testing.T, pl *Plan, s *Stage) (port, pcoll string) {
	t.Helper()
	d, _, err := pl.Descriptor(s, "localhost:1")
	if err != nil {
		t.Fatal(err)
	}
	var src fnpb.RemoteGrpcPort
	if err := proto.Unmarshal(d.GetTransforms()[s.ID+"/source"].GetSpec().GetPayload(), &src); err != nil {
		t.Fatal(err)
	}
	return src.GetCoderId(), d.GetPcollections()[s.Inputs[0]].GetCoderId()
}

// Each Python stage reading a GroupByKey's output as its main input is
// told the values are a state-backed iterable, in its data port's coder
// and its PCollection's; only that iterable changes. The runner's own
// coders stay as they were: it frames the data with those.
func TestPythonReadsGroupedValuesStateBacked(t *testing.T) {
	pl := pythonGBK(t)
	grouped := groupedOutputs(pl)
	m := pl.Components.GetCoders()
	var readers []string
	for _, s := range pl.Stages {
		if s.Kind != stagekind.SDK {
			continue
		}
		pc := s.Inputs[0]
		if grouped[pc] == "" {
			for in, ic := range s.InputCoders {
				if ic.StateBacked {
					t.Errorf("stage %s reads %s, no GroupByKey output, state-backed", s.ID, in)
				}
			}
			continue
		}
		readers = append(readers, grouped[pc])
		if !s.InputCoders[pc].StateBacked {
			t.Errorf("stage %s reading %s: not state-backed", s.ID, grouped[pc])
		}
		own := pl.Components.GetPcollections()[pc].GetCoderId()
		port, desc := sourceCoder(t, pl, s)
		want := strings.Replace(strings.Join(coderURNs(m, own), " "), coders.URNIterable, URNStateBackedIterable, 1)
		if got := strings.Join(coderURNs(m, desc), " "); got != want {
			t.Errorf("stage %s: descriptor codes %s as %s, want %s", s.ID, grouped[pc], got, want)
		}
		wantPort := strings.Replace(strings.Join(coderURNs(m, pl.Wire[pc]), " "), coders.URNIterable, URNStateBackedIterable, 1)
		if got := strings.Join(coderURNs(m, port), " "); got != wantPort {
			t.Errorf("stage %s: port codes %s as %s, want %s", s.ID, grouped[pc], got, wantPort)
		}
		if m[own].GetComponentCoderIds()[0] != m[desc].GetComponentCoderIds()[0] {
			t.Errorf("stage %s: key coder %s, want the GroupByKey's %s", s.ID, m[desc].GetComponentCoderIds()[0], m[own].GetComponentCoderIds()[0])
		}
		if slices.Contains(coderURNs(m, pl.Wire[pc]), URNStateBackedIterable) {
			t.Errorf("the runner's wire coder of %s changed to %v", grouped[pc], coderURNs(m, pl.Wire[pc]))
		}
	}
	for _, name := range []string{"Main", "Side"} {
		if !slices.Contains(readers, name) {
			t.Errorf("no Python stage reads %s's output; readers of GroupByKeys: %v (regenerate the fixture?)", name, readers)
		}
	}
}

func init() { beam.RegisterFunction(countValues) }

func countValues(_ int, vs func(*string) bool) int {
	n, v := 0, ""
	for vs(&v) {
		n++
	}
	return n
}

// Go stages read a hot key from the plain iterable coder: a Go pipeline's
// descriptors keep their coders.
func TestGoReadsGroupedValuesAsBefore(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	words := beam.ParDo(s, splitWords, beam.Create(s, "a b", "b c"))
	beam.ParDo(s, countValues, beam.GroupByKey(s, beam.AddFixedKey(s, words)))
	stats.Count(s, words)
	pl, err := Build(gopipe.ForTest(t, p))
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range pl.Stages {
		if len(st.InputCoders) > 0 {
			t.Errorf("Go stage %s got input coders %v", st.ID, st.InputCoders)
		}
	}
}

// Only KV<K, iterable<V>> is rewritten, and the rewrite is stored once.
func TestStateBackedValuesShapes(t *testing.T) {
	m := map[string]*pipepb.Coder{
		"k":    {Spec: &pipepb.FunctionSpec{Urn: coders.URNStringUTF8}},
		"v":    {Spec: &pipepb.FunctionSpec{Urn: coders.URNBytes}},
		"vs":   {Spec: &pipepb.FunctionSpec{Urn: coders.URNIterable}, ComponentCoderIds: []string{"v"}},
		"kvs":  {Spec: &pipepb.FunctionSpec{Urn: coders.URNKV}, ComponentCoderIds: []string{"k", "vs"}},
		"kv":   {Spec: &pipepb.FunctionSpec{Urn: coders.URNKV}, ComponentCoderIds: []string{"k", "v"}},
		"lpvs": {Spec: &pipepb.FunctionSpec{Urn: coders.URNLengthPrefix}, ComponentCoderIds: []string{"kvs"}},
	}
	id, ok := stateBackedValues(m, "kvs")
	if !ok || strings.Join(coderURNs(m, id), " ") != "beam:coder:kv:v1 beam:coder:string_utf8:v1 "+URNStateBackedIterable+" beam:coder:bytes:v1" {
		t.Fatalf("stateBackedValues(kvs) = %q %v: %v", id, ok, coderURNs(m, id))
	}
	n := len(m)
	if again, _ := stateBackedValues(m, "kvs"); again != id || len(m) != n {
		t.Errorf("second rewrite gave %q and %d coders, want %q and %d", again, len(m), id, n)
	}
	for _, bad := range []string{"kv", "vs", "lpvs", "missing"} {
		if id, ok := stateBackedValues(m, bad); ok {
			t.Errorf("stateBackedValues(%s) = %q, want no rewrite", bad, id)
		}
	}
}
