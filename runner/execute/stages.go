package execute

import (
	"context"
	"fmt"
	"github.com/beam-runner/beam-runner/runner/bundleio"
	"github.com/beam-runner/beam-runner/runner/spec"
	"maps"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/engine"
	"github.com/beam-runner/beam-runner/runner/plan"
)

// sdkStage is what the driver needs to run bundles of one SDK stage.
type sdkStage struct {
	stage   *plan.Stage
	harness harnesses
	desc    string
	io      plan.StageIO
	sinks   []string
	// side serves the side inputs as the engine had them when it was
	// built, sideChunks chunks of each; sideTokens let the SDK cache them
	// across bundles until more arrive.
	side       *bundleio.Sides
	sideChunks map[string]int
	sideTokens []*fnpb.ProcessBundleRequest_CacheToken
	input      bundleio.Codec
	// bounded: every output is a bounded PCollection, so a splittable
	// stage's restrictions are bounded (see splitFraction).
	bounded bool

	// The truncation descriptor of a splittable stage, used while draining.
	truncDesc, truncSink string
	truncIO              plan.StageIO
	// treeOf is, for the tree stage of a lifted combine's combiner tree,
	// its GroupByKey's stage id, under which its bundles are reported.
	treeOf string
}

// prepareSDKStages builds every SDK stage's descriptor, and the tree
// stages of lifted combines' combiner trees, then registers them all with
// each harness in one request.
func (r *run) prepareSDKStages(ctx context.Context) (map[string]*sdkStage, error) {
	out, err := r.buildSDKStages()
	if err != nil {
		return nil, err
	}
	if err := r.pool.RegisterAdded(ctx); err != nil {
		return nil, err
	}
	return out, nil
}

// buildSDKStages builds the descriptors of prepareSDKStages and adds each
// to its environment's harnesses, unregistered.
func (r *run) buildSDKStages() (map[string]*sdkStage, error) {
	stages, err := spec.SDKStages(r.plan, r.opts.CombineTreeBytes)
	if err != nil {
		return nil, err
	}
	out := map[string]*sdkStage{}
	for _, s := range stages {
		ss, err := r.buildSDKStage(s.Stage)
		if err != nil {
			return nil, err
		}
		ss.treeOf = s.TreeOf
		out[s.Stage.ID] = ss
	}
	return out, nil
}

// buildSDKStage builds one SDK stage's descriptor (and its truncation's,
// for a splittable stage) and adds them to its harnesses, unregistered.
func (r *run) buildSDKStage(s *plan.Stage) (*sdkStage, error) {
	h := r.pool.Harnesses(s.Env)
	if h == nil {
		return nil, fmt.Errorf("stage %s: no harness for environment %q", s.ID, s.Env)
	}
	desc, io, err := r.plan.Descriptor(s, r.pool.Endpoint())
	if err != nil {
		return nil, err
	}
	r.pool.AddDescriptor(s.Env, desc)
	in, err := bundleio.CodecOf(r.plan, s.Inputs[0])
	if err != nil {
		return nil, err
	}
	ss := &sdkStage{stage: s, harness: h, desc: desc.GetId(), io: io, input: in, bounded: r.allBounded(s.Outputs)}
	if s.Truncate != "" {
		td, tio, err := r.plan.TruncateDescriptor(s, r.pool.Endpoint())
		if err != nil {
			return nil, err
		}
		r.pool.AddDescriptor(s.Env, td)
		ss.truncDesc, ss.truncIO = td.GetId(), tio
		for sink := range tio.Sinks {
			ss.truncSink = sink
		}
	}
	for sink := range io.Sinks {
		ss.sinks = append(ss.sinks, sink)
	}
	return ss, nil
}

// ensureSideHandler builds a stage's side-input handler on its first
// bundle, and again, with new cache tokens, once more side input data
// arrived: a streaming stage runs once the side input windows its
// elements read are complete, while later windows still fill. A bundle
// keeps the handler it started with.
func (r *run) ensureSideHandler(ss *sdkStage, eng *engine.Engine) error {
	if len(ss.stage.SideInputs) == 0 {
		return nil
	}
	data, chunks := map[string]*engine.Data{}, map[string]int{}
	for _, si := range ss.stage.SideInputs {
		if data[si.PColl] == nil {
			data[si.PColl] = eng.SideData(si.PColl)
			chunks[si.PColl] = len(data[si.PColl].Chunks)
		}
	}
	if ss.side != nil && maps.Equal(chunks, ss.sideChunks) {
		return nil
	}
	side, tokens, err := bundleio.NewSides(r.plan, ss.stage.SideInputs, func(pc string) *engine.Data { return data[pc] })
	if err != nil {
		return err
	}
	ss.side, ss.sideChunks, ss.sideTokens = side, chunks, tokens
	return nil
}

// allBounded reports whether every one of the PCollections is bounded.
func (r *run) allBounded(pcs []string) bool {
	for _, pc := range pcs {
		if r.plan.Components.GetPcollections()[pc].GetIsBounded() != pipepb.IsBounded_BOUNDED {
			return false
		}
	}
	return true
}
