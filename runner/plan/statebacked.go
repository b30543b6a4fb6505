package plan

import (
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/runner/stagekind"
	"github.com/beam-runner/beam-runner/worker/sdkenv"
)

// A GroupByKey may send a hot key as a state-backed iterable: a first
// chunk of values, then a token whose pages the State API serves
// (engine/agg/hot.go). The Go SDK follows such a token with the plain
// iterable coder; the Python SDK gives a state reader only to
// beam:coder:state_backed_iterable:v1. So a Python stage reading a
// GroupByKey's output is told its values are state-backed: a counted
// iterable is the same bytes under either URN, so nothing else changes.
// Go stages keep their coders, as before.

// URNStateBackedIterable is Beam's iterable whose tail may be state-backed.
const URNStateBackedIterable = "beam:coder:state_backed_iterable:v1"

// stateBackedInputs sets, for each Python stage whose main input a
// GroupByKey produces, the input coders that let it read a hot key.
func (p *Plan) stateBackedInputs() {
	grouped := map[string]bool{}
	for _, s := range p.Stages {
		if s.Kind == stagekind.GBK {
			for _, pc := range s.Outputs {
				grouped[pc] = true
			}
		}
	}
	for _, s := range p.Stages {
		if s.Kind != stagekind.SDK || len(s.Inputs) == 0 || !grouped[s.Inputs[0]] ||
			envLanguage(p.Components.GetEnvironments()[s.Env]) != string(sdkenv.Python) {
			continue
		}
		pc := s.Inputs[0]
		ic, ok := s.InputCoders[pc]
		if !ok { // the foreign rewrite, if any, comes first
			ic = InputCoder{Elem: p.Components.GetPcollections()[pc].GetCoderId(), Wire: p.Wire[pc]}
		}
		elem, ok := stateBackedValues(p.Components.GetCoders(), ic.Elem)
		if !ok {
			continue
		}
		wv := p.Components.GetCoders()[ic.Wire]
		wire := internCoder(p.Components.GetCoders(), ic.Wire+"_sbi", &pipepb.Coder{
			Spec: wv.GetSpec(), ComponentCoderIds: append([]string{elem}, wv.GetComponentCoderIds()[1:]...)})
		if s.InputCoders == nil {
			s.InputCoders = map[string]InputCoder{}
		}
		s.InputCoders[pc] = InputCoder{Elem: elem, Wire: wire, StateBacked: true}
	}
}

// stateBackedValues returns KV<K, state_backed_iterable<V>> for the
// GroupByKey output coder KV<K, iterable<V>> named by id; false if id is
// not of that shape. Only the values' iterable changes: the runner puts a
// token there alone.
func stateBackedValues(m map[string]*pipepb.Coder, id string) (string, bool) {
	kv := m[id]
	if kv.GetSpec().GetUrn() != coders.URNKV || len(kv.GetComponentCoderIds()) != 2 {
		return "", false
	}
	vs := m[kv.GetComponentCoderIds()[1]]
	if vs.GetSpec().GetUrn() != coders.URNIterable || len(vs.GetComponentCoderIds()) != 1 {
		return "", false
	}
	sbi := internCoder(m, kv.GetComponentCoderIds()[1]+"_sbi", &pipepb.Coder{
		Spec: &pipepb.FunctionSpec{Urn: URNStateBackedIterable}, ComponentCoderIds: vs.GetComponentCoderIds()})
	return internCoder(m, id+"_sbi", &pipepb.Coder{
		Spec: kv.GetSpec(), ComponentCoderIds: []string{kv.GetComponentCoderIds()[0], sbi}}), true
}
