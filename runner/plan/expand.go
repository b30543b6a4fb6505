package plan

import (
	"fmt"
	"maps"
	"slices"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"
)

// graph is the pipeline reduced to leaf transforms the runner or the SDK
// executes, over a private copy of the components the planner may extend.
type graph struct {
	comps  *pipepb.Components
	leaves []string // topological order
	// breakBefore marks leaves that must start a new stage because their
	// input must be materialised (the sized restrictions of an SDF, the
	// input of a DoFn that requires stable input).
	breakBefore map[string]bool
	// truncates maps an SDF's processing transform to its truncation.
	truncates map[string]truncateInfo
	// sdkFlattens are flattens the SDK runs: ones that transcode.
	sdkFlattens map[string]bool
	// lifted maps the GroupByKey of each lifted combine to its Merge.
	lifted map[string]string
}

type truncateInfo struct{ transform, out string }

func newGraph(p *pipepb.Pipeline) (*graph, error) {
	g := &graph{
		comps:       proto.Clone(p.GetComponents()).(*pipepb.Components),
		breakBefore: map[string]bool{},
		truncates:   map[string]truncateInfo{},
		sdkFlattens: map[string]bool{},
		lifted:      map[string]string{},
	}
	if g.comps == nil { // no transforms is valid Beam: a plan of no stages
		g.comps = &pipepb.Components{}
	}
	var leaves []string
	for _, id := range p.GetRootTransformIds() {
		if err := g.collect(id, &leaves, 0); err != nil {
			return nil, err
		}
	}
	sorted, err := g.topoSort(leaves)
	if err != nil {
		return nil, err
	}
	g.leaves = sorted
	g.markStableInputs()
	g.transcodeFlattenInputs()
	return g, nil
}

// collect appends the leaves under transform id, expanding composites.
func (g *graph) collect(id string, out *[]string, depth int) error {
	if depth > 100 {
		return fmt.Errorf("transform %q: composites nested too deeply", id)
	}
	t := g.comps.GetTransforms()[id]
	if t == nil {
		return fmt.Errorf("transform %q is referenced but not defined", id)
	}
	urn := t.GetSpec().GetUrn()
	if urn == URNCombinePerKey && g.liftable(t) {
		ids, err := g.liftCombine(id, t)
		if err != nil {
			return err
		}
		*out = append(*out, ids...)
		return nil
	}
	if len(t.GetSubtransforms()) > 0 {
		for _, sub := range t.GetSubtransforms() {
			if err := g.collect(sub, out, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	if passThrough(t) {
		return nil // computes nothing: its outputs are produced upstream
	}
	if err := checkLeaf(id, t); err != nil {
		return err
	}
	if urn == URNParDo {
		if ids, ok, err := g.expandSDF(id, t); err != nil {
			return err
		} else if ok {
			*out = append(*out, ids...)
			return nil
		}
	}
	*out = append(*out, id)
	return nil
}

// passThrough reports whether t, a transform with no subtransforms, is a
// composite whose expansion was empty: every output is one of its inputs
// (Python's Create of one element wraps its input in such a MaybeReshuffle,
// whatever the URN). It has nothing to run, and running it would make a
// second producer of its input. A leaf with no outputs is not one: it may
// be an unknown primitive run for its effects, which must be refused.
func passThrough(t *pipepb.PTransform) bool {
	if len(t.GetOutputs()) == 0 {
		return false
	}
	ins := map[string]bool{}
	for _, pc := range t.GetInputs() {
		ins[pc] = true
	}
	for _, pc := range t.GetOutputs() {
		if !ins[pc] {
			return false
		}
	}
	return true
}

// checkLeaf rejects leaves the runner cannot execute, naming them.
func checkLeaf(id string, t *pipepb.PTransform) error {
	urn := t.GetSpec().GetUrn()
	if urn == "" && len(t.GetInputs()) == 0 && len(t.GetOutputs()) == 0 {
		return nil // an empty composite: nothing to run
	}
	if !sdkLeaves[urn] && !runnerLeaves[urn] {
		return fmt.Errorf("transform %q (%s): URN %q is not supported by beam-runner", t.GetUniqueName(), id, urn)
	}
	if urn == URNParDo {
		return checkParDo(id, t)
	}
	return checkRunnerLeafShape(id, t)
}

// checkRunnerLeafShape rejects runner-executed transforms whose inputs or
// outputs do not fit what the runner computes.
func checkRunnerLeafShape(id string, t *pipepb.PTransform) error {
	name := fmt.Sprintf("transform %q (%s)", t.GetUniqueName(), id)
	switch t.GetSpec().GetUrn() {
	case URNImpulse, URNGBK, URNFlatten:
		if len(t.GetOutputs()) != 1 {
			return fmt.Errorf("%s (%s) must have exactly one output, has %d", name, t.GetSpec().GetUrn(), len(t.GetOutputs()))
		}
	case URNTestStream, URNTestStreamGo:
		if len(t.GetOutputs()) == 0 {
			return fmt.Errorf("%s (TestStream) has no outputs", name)
		}
	}
	if t.GetSpec().GetUrn() == URNGBK && len(t.GetInputs()) != 1 {
		return fmt.Errorf("%s (GroupByKey) must have exactly one input, has %d", name, len(t.GetInputs()))
	}
	return nil
}

func checkParDo(id string, t *pipepb.PTransform) error {
	var pl pipepb.ParDoPayload
	if err := proto.Unmarshal(t.GetSpec().GetPayload(), &pl); err != nil {
		return fmt.Errorf("transform %q (%s): malformed ParDoPayload: %v", t.GetUniqueName(), id, err)
	}
	name := fmt.Sprintf("transform %q (%s)", t.GetUniqueName(), id)
	fam := pl.GetOnWindowExpirationTimerFamilySpec()
	if fam == "" {
		return nil
	}
	// The SDK declares the family among its timers; the runner sets them.
	spec, ok := pl.GetTimerFamilySpecs()[fam]
	if !ok {
		return fmt.Errorf("%s names OnWindowExpiration timer family %q, which is not among its timer families", name, fam)
	}
	if spec.GetTimeDomain() != pipepb.TimeDomain_EVENT_TIME {
		return fmt.Errorf("%s: OnWindowExpiration timer family %q must be in the event-time domain, is %v", name, fam, spec.GetTimeDomain())
	}
	return nil
}

// topoSort orders leaves so every producer precedes its consumers, keeping
// the discovery order among independent leaves for determinism.
func (g *graph) topoSort(leaves []string) ([]string, error) {
	producer := map[string]string{}
	for _, id := range leaves {
		for _, pc := range g.comps.GetTransforms()[id].GetOutputs() {
			producer[pc] = id
		}
	}
	indeg := map[string]int{}
	users := map[string][]string{}
	for _, id := range leaves {
		seen := map[string]bool{}
		for _, pc := range sortedValues(g.comps.GetTransforms()[id].GetInputs()) {
			p, ok := producer[pc]
			if !ok {
				return nil, fmt.Errorf("transform %q consumes PCollection %q that no transform produces", id, pc)
			}
			if !seen[p] {
				seen[p] = true
				indeg[id]++
				users[p] = append(users[p], id)
			}
		}
	}
	var out, ready []string
	for _, id := range leaves {
		if indeg[id] == 0 {
			ready = append(ready, id)
		}
	}
	for len(ready) > 0 {
		id := ready[0]
		ready = ready[1:]
		out = append(out, id)
		for _, u := range users[id] {
			if indeg[u]--; indeg[u] == 0 {
				ready = append(ready, u)
			}
		}
	}
	if len(out) != len(leaves) {
		return nil, fmt.Errorf("pipeline graph has a cycle")
	}
	return out, nil
}

func sortedValues(m map[string]string) []string {
	keys := slices.Sorted(maps.Keys(m))
	vals := make([]string, len(keys))
	for i, k := range keys {
		vals[i] = m[k]
	}
	return vals
}

func onlyValue(m map[string]string) (string, bool) {
	if len(m) != 1 {
		return "", false
	}
	for _, v := range m {
		return v, true
	}
	return "", false
}
