package execute

import (
	"context"
	"fmt"
	"sync"

	"github.com/beam-runner/beam-runner/harness"
	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/runner/engine"
	"github.com/beam-runner/beam-runner/runner/plan"
)

// minBundleBytes keeps small inputs in one bundle: splitting them costs
// more in round trips than it gains.
const minBundleBytes = 1 << 20

// runSDK runs an SDK stage: its input is cut into bundles that run at once
// on the environment's harness; outputs are committed only if all succeed.
func (r *run) runSDK(ctx context.Context, s *plan.Stage) error {
	h := r.harnesses[s.Env]
	if h == nil {
		return fmt.Errorf("no harness for environment %q", s.Env)
	}
	desc, io, err := r.plan.Descriptor(s, r.srv.Endpoint())
	if err != nil {
		return err
	}
	r.srv.AddDescriptor(desc)
	if err := h.Register(ctx, desc); err != nil {
		return err
	}
	bundles, err := r.bundles(s)
	if err != nil {
		return err
	}
	side, err := r.sideHandler(s)
	if err != nil {
		return err
	}
	var sinks []string
	for sink := range io.Sinks {
		sinks = append(sinks, sink)
	}
	results, err := r.processAll(ctx, h, bundles, harness.Bundle{
		Descriptor: desc.GetId(), InputTransform: io.Source, Outputs: sinks, State: side,
	})
	if err != nil {
		return err
	}
	r.commit(io, results)
	return nil
}

// bundles cuts the stage's main input into pieces for parallel bundles.
func (r *run) bundles(s *plan.Stage) ([][][]byte, error) {
	in := r.input(s.Inputs[0])
	n := min(r.opts.Parallelism, in.Bytes/minBundleBytes)
	if n <= 1 {
		return [][][]byte{in.Chunks}, nil
	}
	wv, err := r.codec(s.Inputs[0])
	if err != nil {
		return nil, err
	}
	return engine.Split(in, wv, n)
}

func (r *run) processAll(ctx context.Context, h *harness.Harness, inputs [][][]byte, tmpl harness.Bundle) ([]harness.Result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make([]harness.Result, len(inputs))
	errs := make([]error, len(inputs))
	sem := make(chan struct{}, r.opts.Parallelism)
	var wg sync.WaitGroup
	for i, in := range inputs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			b := tmpl
			b.Input = in
			results[i], errs[i] = h.Process(ctx, b)
			if errs[i] != nil {
				cancel()
			}
		}()
	}
	wg.Wait()
	return results, firstError(errs)
}

// firstError prefers the SDK's own error over the cancellations it caused.
func firstError(errs []error) error {
	var first error
	for _, err := range errs {
		if err == nil {
			continue
		}
		if _, ok := err.(*harness.BundleError); ok {
			return err
		}
		if first == nil {
			first = err
		}
	}
	return first
}

// commit stores what the bundles produced and merges their metrics.
func (r *run) commit(io plan.StageIO, results []harness.Result) {
	out := map[string]*engine.Data{}
	for _, pc := range io.Sinks {
		out[pc] = &engine.Data{}
	}
	// Flatten outputs are fed by several sinks, possibly several stages.
	for _, res := range results {
		for sink, frames := range res.Outputs {
			pc, ok := io.Sinks[sink]
			if !ok {
				continue
			}
			out[pc].Add(join(frames))
		}
		r.metrics.AddBundle(res.Monitoring)
	}
	for pc, d := range out {
		r.log.Debug("committed", "pcollection", pc, "bytes", d.Bytes)
		r.store(pc, d)
	}
	r.job.SetMetrics(r.metrics.Results())
}

// join concatenates a stream's frames: elements may span frames.
func join(frames [][]byte) []byte {
	if len(frames) == 1 {
		return frames[0]
	}
	n := 0
	for _, f := range frames {
		n += len(f)
	}
	b := make([]byte, 0, n)
	for _, f := range frames {
		b = append(b, f...)
	}
	return b
}

// sideHandler serves the stage's side inputs, indexing each on first use.
func (r *run) sideHandler(s *plan.Stage) (*engine.SideHandler, error) {
	if len(s.SideInputs) == 0 {
		return nil, nil
	}
	build := map[engine.SideRef]func() (*engine.SideIndex, error){}
	for _, si := range s.SideInputs {
		wv, err := r.codec(si.PColl)
		if err != nil {
			return nil, err
		}
		var key *coders.Codec
		if si.URN == engine.SideMultimap {
			if key = wv.Elem.Component(0); key == nil {
				return nil, fmt.Errorf("multimap side input %q of %q is not KV-coded", si.Tag, si.Transform)
			}
		} else if si.URN != engine.SideIterable {
			return nil, fmt.Errorf("side input %q of %q: access pattern %q is not supported", si.Tag, si.Transform, si.URN)
		}
		data := r.input(si.PColl)
		build[engine.SideRef{Transform: si.Transform, SideInput: si.Tag}] = func() (*engine.SideIndex, error) {
			return engine.IndexSide(data, wv, key)
		}
	}
	return engine.NewSideHandler(build), nil
}
