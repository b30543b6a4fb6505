package plan

import (
	"fmt"
	"maps"
	"slices"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/runner/stagekind"
	"google.golang.org/protobuf/proto"
)

const coderWindowedValue = "beam:coder:windowed_value:v1"

// wireCoders gives every PCollection the coder its elements cross the Fn API
// with: its own coder with every coder the runner does not know wrapped in a
// length prefix, so the runner can find element boundaries. Returns
// PCollection id -> windowed value coder id. Must run before descriptors are
// built, since it adds coders.
func wireCoders(comps *pipepb.Components, original map[string]string) (map[string]string, error) {
	if err := wireWindowCoders(comps); err != nil {
		return nil, err
	}
	wire := map[string]string{}
	for _, id := range slices.Sorted(maps.Keys(comps.GetPcollections())) {
		pc := comps.GetPcollections()[id]
		elem, err := coders.LPUnknown(comps.Coders, pc.GetCoderId())
		if err != nil {
			return nil, fmt.Errorf("PCollection %q: %v", id, err)
		}
		original[id] = pc.GetCoderId()
		pc.CoderId = elem
		ws := comps.GetWindowingStrategies()[pc.GetWindowingStrategyId()]
		if ws == nil {
			return nil, fmt.Errorf("PCollection %q: windowing strategy %q is not defined", id, pc.GetWindowingStrategyId())
		}
		win, err := coders.LPUnknown(comps.Coders, ws.GetWindowCoderId())
		if err != nil {
			return nil, fmt.Errorf("PCollection %q window coder: %v", id, err)
		}
		wire[id] = windowedValueCoder(comps, elem, win)
	}
	return wire, nil
}

// windowedValueCoder adds (once) and names the windowed value coder of elem
// in windows of win.
func windowedValueCoder(comps *pipepb.Components, elem, win string) string {
	wvID := "wv:" + elem + ":" + win
	if _, ok := comps.Coders[wvID]; !ok {
		comps.Coders[wvID] = &pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: coderWindowedValue}, ComponentCoderIds: []string{elem, win}}
	}
	return wvID
}

// wireWindowCoders makes every window coder one the runner can read the
// end of: an SDK's own window coder becomes beam:coder:custom_window:v1
// around it (length-prefixed if the runner cannot measure it), which the
// SDKs write as the window's max timestamp, then the window. The windowing
// strategy itself is changed, so the SDK encodes windows the same way on the
// data plane, in state keys and in side-input requests.
func wireWindowCoders(comps *pipepb.Components) error {
	for _, id := range slices.Sorted(maps.Keys(comps.GetWindowingStrategies())) {
		ws := comps.GetWindowingStrategies()[id]
		c := comps.GetCoders()[ws.GetWindowCoderId()]
		if c == nil {
			return fmt.Errorf("windowing strategy %q: window coder %q is not defined", id, ws.GetWindowCoderId())
		}
		if coders.WindowKindOf(c.GetSpec().GetUrn()) != coders.OtherWindow {
			continue
		}
		inner, err := coders.LPUnknown(comps.Coders, ws.GetWindowCoderId())
		if err != nil {
			return fmt.Errorf("windowing strategy %q window coder: %v", id, err)
		}
		cw := "cw:" + inner
		if _, ok := comps.Coders[cw]; !ok {
			comps.Coders[cw] = &pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: coders.URNCustomWindow}, ComponentCoderIds: []string{inner}}
		}
		ws.WindowCoderId = cw
	}
	return nil
}

// StageIO names the data ports of an SDK stage's descriptor.
type StageIO struct {
	Source string            // data source transform id
	Sinks  map[string]string // data sink transform id -> PCollection
}

// Descriptor builds the ProcessBundleDescriptor of an SDK stage whose data
// and state flow through the given Fn API endpoint.
func (p *Plan) Descriptor(s *Stage, endpoint string) (*fnpb.ProcessBundleDescriptor, StageIO, error) {
	if s.Kind != stagekind.SDK {
		return nil, StageIO{}, fmt.Errorf("stage %s is not executed by an SDK", s.ID)
	}
	api := &pipepb.ApiServiceDescriptor{Url: endpoint}
	d := &fnpb.ProcessBundleDescriptor{
		Id:                  s.ID,
		Transforms:          map[string]*pipepb.PTransform{},
		Pcollections:        map[string]*pipepb.PCollection{},
		WindowingStrategies: p.Components.GetWindowingStrategies(),
		Coders:              p.Components.GetCoders(),
		Environments:        p.Components.GetEnvironments(),
	}
	// Python harnesses open the state channel for every descriptor, so it
	// is always given.
	d.StateApiServiceDescriptor = api
	if len(s.Timers) > 0 {
		d.TimerApiServiceDescriptor = api
	}
	for _, id := range s.Transforms {
		t := p.Components.GetTransforms()[id]
		d.Transforms[id] = t
		for _, pc := range t.GetInputs() {
			d.Pcollections[pc] = p.Components.GetPcollections()[pc]
		}
	}
	own := p.ownCoders(s)
	for _, id := range s.Transforms {
		for _, pc := range p.Components.GetTransforms()[id].GetOutputs() {
			d.Pcollections[pc] = own(pc)
		}
	}
	io := StageIO{Source: s.ID + "/source", Sinks: map[string]string{}}
	main := s.Inputs[0]
	d.Pcollections[main] = p.Components.GetPcollections()[main]
	wire := p.Wire[main]
	for pc, ic := range s.InputCoders {
		col := proto.Clone(p.Components.GetPcollections()[pc]).(*pipepb.PCollection)
		col.CoderId = ic.Elem
		d.Pcollections[pc] = col
		if pc == main {
			wire = ic.Wire
		}
	}
	d.Transforms[io.Source] = port(URNDataSource, "source", api, wire, nil, map[string]string{"out": main})
	for _, pc := range s.Outputs {
		sink := s.ID + "/sink/" + pc
		d.Transforms[sink] = port(URNDataSink, "sink", api, p.Wire[pc], map[string]string{"in": pc}, nil)
		io.Sinks[sink] = pc
	}
	for i, fs := range s.FlattenSinks {
		sink := fmt.Sprintf("%s/sink/%s/flatten%d", s.ID, fs.To, i)
		d.Transforms[sink] = port(URNDataSink, "sink", api, p.Wire[fs.To], map[string]string{"in": fs.From}, nil)
		io.Sinks[sink] = fs.To
	}
	return d, io, nil
}

// ownCoders returns, for a PCollection the stage's transforms write, the
// PCollection as the descriptor gives it: with the coder the SDK wrote into
// the pipeline when the stage's SDK knows every coder in it, else with its
// wire coder. An SDK may depend on the coder itself, not just the bytes:
// Java's schema'd outputs (a Row receiver) need the SchemaCoder, which a
// length prefix hides. Such a PCollection still crosses the data plane
// with its wire coder, which the sink port names. PCollections the stage
// reads keep their wire coders: a stateful DoFn encodes state keys with
// its input's key coder, and those must match the keys the runner routes
// by.
func (p *Plan) ownCoders(s *Stage) func(pc string) *pipepb.PCollection {
	r := foreignRewriter{coders: p.Components.GetCoders(), lang: envLanguage(p.Components.GetEnvironments()[s.Env])}
	return func(pc string) *pipepb.PCollection {
		col := p.Components.GetPcollections()[pc]
		orig, ok := p.SDKCoder[pc]
		if !ok || orig == col.GetCoderId() || !r.knows(orig, 0) {
			return col
		}
		own := proto.Clone(col).(*pipepb.PCollection)
		own.CoderId = orig
		return own
	}
}

func port(urn, name string, api *pipepb.ApiServiceDescriptor, coder string, in, out map[string]string) *pipepb.PTransform {
	payload, _ := proto.Marshal(&fnpb.RemoteGrpcPort{ApiServiceDescriptor: api, CoderId: coder})
	return &pipepb.PTransform{
		UniqueName: name,
		Spec:       &pipepb.FunctionSpec{Urn: urn, Payload: payload},
		Inputs:     in,
		Outputs:    out,
	}
}

// TruncateDescriptor builds the descriptor that truncates the sized
// restrictions of a splittable stage's input, used while draining. Its
// output has the same wire coder as its input, so it feeds the stage.
func (p *Plan) TruncateDescriptor(s *Stage, endpoint string) (*fnpb.ProcessBundleDescriptor, StageIO, error) {
	if s.Truncate == "" {
		return nil, StageIO{}, fmt.Errorf("stage %s has no splittable DoFn to truncate", s.ID)
	}
	api := &pipepb.ApiServiceDescriptor{Url: endpoint}
	main, out := s.Inputs[0], s.TruncateOut
	t := p.Components.GetTransforms()[s.Truncate]
	d := &fnpb.ProcessBundleDescriptor{
		Id:                        s.ID + "/truncate",
		Transforms:                map[string]*pipepb.PTransform{s.Truncate: t},
		Pcollections:              map[string]*pipepb.PCollection{},
		WindowingStrategies:       p.Components.GetWindowingStrategies(),
		Coders:                    p.Components.GetCoders(),
		Environments:              p.Components.GetEnvironments(),
		StateApiServiceDescriptor: api,
	}
	for _, pc := range t.GetInputs() {
		d.Pcollections[pc] = p.Components.GetPcollections()[pc]
	}
	d.Pcollections[out] = p.Components.GetPcollections()[out]
	wire := p.Wire[main]
	if ic, ok := s.InputCoders[main]; ok {
		col := proto.Clone(p.Components.GetPcollections()[main]).(*pipepb.PCollection)
		col.CoderId, wire = ic.Elem, ic.Wire
		d.Pcollections[main] = col
	}
	io := StageIO{Source: d.Id + "/source", Sinks: map[string]string{d.Id + "/sink": out}}
	d.Transforms[io.Source] = port(URNDataSource, "source", api, wire, nil, map[string]string{"out": main})
	d.Transforms[d.Id+"/sink"] = port(URNDataSink, "sink", api, p.Wire[out], map[string]string{"in": out}, nil)
	return d, io, nil
}
