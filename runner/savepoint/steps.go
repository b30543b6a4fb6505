package savepoint

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"
)

// Step kinds: the steps whose state a savepoint holds.
const (
	Stateful = "stateful" // a ParDo with state or timers
	Grouping = "grouping" // a GroupByKey or a CombinePerKey
)

const (
	urnPardo        = "beam:transform:pardo:v1"
	urnGBK          = "beam:transform:group_by_key:v1"
	urnCombinePerKy = "beam:transform:combine_per_key:v1"
	urnKV           = "beam:coder:kv:v1"
)

// Coder names a coder as one pipeline calls it (ID) and as what it is
// (Spec: its URN and components, recursively, and a digest of its
// payload), which is what compatibility compares: ids differ between
// two submissions of the same pipeline.
type Coder struct {
	ID   string `json:"id"`
	Spec string `json:"spec"`
}

// Step is a stateful or grouping transform whose state a savepoint
// holds, named by its unique name, which is what a new pipeline's steps
// are matched by.
type Step struct {
	Name        string `json:"name"`
	TransformID string `json:"transform_id"`
	Kind        string `json:"kind"`
	Key         Coder  `json:"key_coder"`
	Value       Coder  `json:"value_coder"`
	Window      Coder  `json:"window_coder"`
	// State is, per state id of a stateful ParDo, its type and coders;
	// Timers its timer family ids.
	State  map[string]string `json:"state,omitempty"`
	Timers []string          `json:"timers,omitempty"`
	// Windowing describes a grouping step's windowing strategy (window
	// fn, trigger, accumulation, lateness, timestamp combiner): its
	// groups are kept by it (from version 3; empty in older
	// manifests, and then not compared).
	Windowing string `json:"windowing,omitempty"`
}

// Steps lists p's stateful and grouping steps, by unique name. A
// transform it cannot read (a ParDo payload that does not parse) is an
// error naming it.
func Steps(p *pipepb.Pipeline) ([]Step, error) {
	comps := p.GetComponents()
	var out []Step
	for _, id := range slices.Sorted(maps.Keys(comps.GetTransforms())) {
		t := comps.GetTransforms()[id]
		st, ok, err := step(comps, id, t)
		if err != nil {
			return nil, fmt.Errorf("transform %q (%s): %w", t.GetUniqueName(), id, err)
		}
		if ok {
			out = append(out, st)
		}
	}
	slices.SortFunc(out, func(a, b Step) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// step reads t as a step whose state a savepoint holds, if it is one.
func step(comps *pipepb.Components, id string, t *pipepb.PTransform) (Step, bool, error) {
	st := Step{Name: t.GetUniqueName(), TransformID: id}
	side := map[string]bool{}
	switch t.GetSpec().GetUrn() {
	case urnGBK, urnCombinePerKy:
		st.Kind = Grouping
	case urnPardo:
		var pd pipepb.ParDoPayload
		if err := proto.Unmarshal(t.GetSpec().GetPayload(), &pd); err != nil {
			return st, false, fmt.Errorf("its ParDo payload does not parse: %w", err)
		}
		if len(pd.GetStateSpecs()) == 0 && len(pd.GetTimerFamilySpecs()) == 0 {
			return st, false, nil
		}
		st.Kind = Stateful
		st.State = stateSpecs(comps, pd.GetStateSpecs())
		st.Timers = slices.Sorted(maps.Keys(pd.GetTimerFamilySpecs()))
		for k := range pd.GetSideInputs() {
			side[k] = true
		}
	default:
		return st, false, nil
	}
	var main string
	for _, local := range slices.Sorted(maps.Keys(t.GetInputs())) {
		if !side[local] {
			main = t.GetInputs()[local]
			break
		}
	}
	pc := comps.GetPcollections()[main]
	if pc == nil {
		return st, false, fmt.Errorf("its main input PCollection %q is not in the pipeline", main)
	}
	st.Key, st.Value = kvCoders(comps, pc.GetCoderId())
	ws := comps.GetWindowingStrategies()[pc.GetWindowingStrategyId()]
	st.Window = coderOf(comps, ws.GetWindowCoderId())
	if st.Kind == Grouping {
		st.Windowing = windowing(ws)
	}
	return st, true, nil
}

// kvCoders splits a KV coder into its key and value coders; another
// coder is all key.
func kvCoders(comps *pipepb.Components, id string) (Coder, Coder) {
	c := comps.GetCoders()[id]
	if c.GetSpec().GetUrn() == urnKV && len(c.GetComponentCoderIds()) == 2 {
		return coderOf(comps, c.GetComponentCoderIds()[0]), coderOf(comps, c.GetComponentCoderIds()[1])
	}
	return coderOf(comps, id), Coder{}
}

func coderOf(comps *pipepb.Components, id string) Coder {
	return Coder{ID: id, Spec: CoderSpec(comps, id)}
}

// maxCoderDepth bounds CoderSpec's recursion: a coder graph with a cycle
// (a malformed pipeline) must not loop.
const maxCoderDepth = 32

// CoderSpec describes coder id as what it is: "urn(components)", with
// "#" and a digest of the payload if it has one (payloadDigest), and "?" for a coder the
// components do not hold.
func CoderSpec(comps *pipepb.Components, id string) string {
	return coderSpec(comps, id, 0)
}

func coderSpec(comps *pipepb.Components, id string, depth int) string {
	c, ok := comps.GetCoders()[id]
	if !ok || depth > maxCoderDepth {
		return "?"
	}
	var b strings.Builder
	b.WriteString(c.GetSpec().GetUrn())
	if p := c.GetSpec().GetPayload(); len(p) > 0 {
		b.WriteString(payloadDigest(c.GetSpec().GetUrn(), p))
	}
	if ids := c.GetComponentCoderIds(); len(ids) > 0 {
		parts := make([]string, len(ids))
		for i, cid := range ids {
			parts[i] = coderSpec(comps, cid, depth+1)
		}
		b.WriteString("(" + strings.Join(parts, ",") + ")")
	}
	return b.String()
}

// payloadDigest is "#" and a digest of a coder's payload: of what in
// it says how the coder encodes, for the Java SDK's coders, which a
// rebuilt pipeline serializes with new schema UUIDs
// (javaCoderIdentity), marked "#j" since it digests other bytes.
func payloadDigest(urn string, p []byte) string {
	if urn == URNJavaCoder {
		if id, ok := javaCoderIdentity(p); ok {
			sum := sha256.Sum256(id)
			return "#j" + hex.EncodeToString(sum[:6])
		}
	}
	sum := sha256.Sum256(p)
	return "#" + hex.EncodeToString(sum[:6])
}

// stateSpecs describes each state spec as its type and coders.
func stateSpecs(comps *pipepb.Components, specs map[string]*pipepb.StateSpec) map[string]string {
	if len(specs) == 0 {
		return nil
	}
	out := map[string]string{}
	cs := func(id string) string { return CoderSpec(comps, id) }
	for id, s := range specs {
		switch {
		case s.GetReadModifyWriteSpec() != nil:
			out[id] = "value(" + cs(s.GetReadModifyWriteSpec().GetCoderId()) + ")"
		case s.GetBagSpec() != nil:
			out[id] = "bag(" + cs(s.GetBagSpec().GetElementCoderId()) + ")"
		case s.GetOrderedListSpec() != nil:
			out[id] = "ordered_list(" + cs(s.GetOrderedListSpec().GetElementCoderId()) + ")"
		case s.GetCombiningSpec() != nil:
			out[id] = "combining(" + cs(s.GetCombiningSpec().GetAccumulatorCoderId()) + ")"
		case s.GetMapSpec() != nil:
			out[id] = "map(" + cs(s.GetMapSpec().GetKeyCoderId()) + "," + cs(s.GetMapSpec().GetValueCoderId()) + ")"
		case s.GetMultimapSpec() != nil:
			out[id] = "multimap(" + cs(s.GetMultimapSpec().GetKeyCoderId()) + "," + cs(s.GetMultimapSpec().GetValueCoderId()) + ")"
		case s.GetSetSpec() != nil:
			out[id] = "set(" + cs(s.GetSetSpec().GetElementCoderId()) + ")"
		default:
			out[id] = "unknown"
		}
	}
	return out
}

// windowing describes what of a windowing strategy a grouping step's
// groups depend on; the environment of its window fn does not count.
func windowing(ws *pipepb.WindowingStrategy) string {
	fn := ws.GetWindowFn()
	sum := sha256.Sum256(fn.GetPayload())
	trig, _ := proto.MarshalOptions{Deterministic: true}.Marshal(ws.GetTrigger())
	tsum := sha256.Sum256(trig)
	return fmt.Sprintf("%s#%s trigger#%s %v lateness=%dms %v %v", fn.GetUrn(), hex.EncodeToString(sum[:6]),
		hex.EncodeToString(tsum[:6]), ws.GetAccumulationMode(), ws.GetAllowedLateness(), ws.GetOutputTime(), ws.GetClosingBehavior())
}
