package plan

import (
	"fmt"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/runner/stagekind"
	"google.golang.org/protobuf/proto"
)

// SDKMergesWindows reports whether windows of ws merge by the SDK's rules: a
// merging WindowFn other than sessions, which the runner merges itself.
func SDKMergesWindows(ws *pipepb.WindowingStrategy) bool {
	return ws.GetMergeStatus() == pipepb.MergeStatus_NEEDS_MERGE && ws.GetWindowFn().GetUrn() != URNSessions
}

const (
	globalWindowingID = "beam-runner/global-windowing"
	globalWindowCoder = "beam-runner/global-window"
	mergeNonceCoderID = "beam-runner/bytes"
)

// addWindowMergeStages gives every GroupByKey whose windows the SDK merges a
// stage of its own running the WindowFn's merge_windows, as Python's
// FnApiRunner asks its workers: KV<nonce, iterable<window>> in, KV<nonce,
// KV<iterable<window>, iterable<KV<window, iterable<window>>>>> out, in the
// global window. Windows are coded with the GBK input's wire window coder.
func (p *Plan) addWindowMergeStages() error {
	n := len(p.Stages)
	for _, s := range p.Stages[:n] {
		if s.Kind != stagekind.GBK || !SDKMergesWindows(s.Windowing) {
			continue
		}
		ms, err := p.windowMergeStage(s, fmt.Sprintf("s%d", len(p.Stages)))
		if err != nil {
			return fmt.Errorf("GroupByKey stage %s: %v", s.ID, err)
		}
		s.WindowMergeStage = ms.ID
		p.Stages = append(p.Stages, ms)
		p.Consumers[ms.Inputs[0]]++
	}
	return nil
}

func (p *Plan) windowMergeStage(gbk *Stage, id string) (*Stage, error) {
	comps := p.Components
	ws := gbk.Windowing
	if comps.GetEnvironments()[ws.GetEnvironmentId()] == nil {
		return nil, fmt.Errorf("window fn %q merges windows, which only its SDK can do, but its windowing strategy names no known environment (%q)", ws.GetWindowFn().GetUrn(), ws.GetEnvironmentId())
	}
	win := comps.GetCoders()[p.Wire[gbk.Inputs[0]]].GetComponentCoderIds()[1]
	payload, err := proto.Marshal(ws.GetWindowFn())
	if err != nil {
		return nil, err
	}
	p.addGlobalWindowing()
	wins := p.coder(coderIterable, win)
	inElem := p.coder(coderKV, mergeNonceCoderID, wins)
	outElem := p.coder(coderKV, mergeNonceCoderID, p.coder(coderKV, wins, p.coder(coderIterable, p.coder(coderKV, win, wins))))
	in, out := gbk.ID+"/merge-windows/in", gbk.ID+"/merge-windows/out"
	for pc, elem := range map[string]string{in: inElem, out: outElem} {
		comps.Pcollections[pc] = &pipepb.PCollection{UniqueName: pc, CoderId: elem, IsBounded: pipepb.IsBounded_BOUNDED, WindowingStrategyId: globalWindowingID}
		p.Wire[pc] = windowedValueCoder(comps, elem, globalWindowCoder)
		p.SDKCoder[pc] = elem
	}
	tid := gbk.ID + "/merge-windows"
	comps.Transforms[tid] = &pipepb.PTransform{
		UniqueName:    tid,
		Spec:          &pipepb.FunctionSpec{Urn: URNMergeWindows, Payload: payload},
		Inputs:        map[string]string{"input": in},
		Outputs:       map[string]string{"output": out},
		EnvironmentId: ws.GetEnvironmentId(),
	}
	gw := comps.GetWindowingStrategies()[globalWindowingID]
	return &Stage{ID: id, Kind: stagekind.SDK, Env: ws.GetEnvironmentId(), Transforms: []string{tid}, Inputs: []string{in}, Outputs: []string{out}, Windowing: gw}, nil
}

// coder adds (once) the coder of urn over components and names it.
func (p *Plan) coder(urn string, comps ...string) string {
	id := "beam-runner/" + urn
	for _, c := range comps {
		id += "|" + c
	}
	if _, ok := p.Components.Coders[id]; !ok {
		p.Components.Coders[id] = &pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: urn}, ComponentCoderIds: comps}
	}
	return id
}

// addGlobalWindowing adds the windowing of the runner's own PCollections.
func (p *Plan) addGlobalWindowing() {
	comps := p.Components
	if _, ok := comps.WindowingStrategies[globalWindowingID]; ok {
		return
	}
	comps.Coders[globalWindowCoder] = &pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: coders.URNGlobalWindow}}
	comps.Coders[mergeNonceCoderID] = &pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: coders.URNBytes}}
	comps.WindowingStrategies[globalWindowingID] = &pipepb.WindowingStrategy{
		WindowFn:         &pipepb.FunctionSpec{Urn: URNGlobalWindows},
		MergeStatus:      pipepb.MergeStatus_NON_MERGING,
		WindowCoderId:    globalWindowCoder,
		Trigger:          &pipepb.Trigger{Trigger: &pipepb.Trigger_Default_{Default: &pipepb.Trigger_Default{}}},
		AccumulationMode: pipepb.AccumulationMode_DISCARDING,
		OutputTime:       pipepb.OutputTime_END_OF_WINDOW,
		ClosingBehavior:  pipepb.ClosingBehavior_EMIT_IF_NONEMPTY,
		OnTimeBehavior:   pipepb.OnTimeBehavior_FIRE_ALWAYS,
	}
}
