package execute

import (
	"context"
	"fmt"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/runner/engine"
	"github.com/beam-runner/beam-runner/runner/plan"
)

// pcoll is a materialised PCollection and what it takes to read it.
type pcoll struct {
	data    *engine.Data
	readers int // stages still to read it
}

type pipeApi struct{ url string }

func (p *pipeApi) desc() *pipepb.ApiServiceDescriptor {
	return &pipepb.ApiServiceDescriptor{Url: p.url}
}

type stageResult struct {
	stage *plan.Stage
	err   error
}

// runStages runs every stage once its dependencies are done, several at a
// time when the graph allows, and stops at the first failure.
func (r *run) runStages(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := map[string]bool{}
	started := map[string]bool{}
	results := make(chan stageResult)
	running := 0
	for len(done) < len(r.plan.Stages) {
		for _, s := range r.plan.Stages {
			if !started[s.ID] && depsDone(s, done) {
				started[s.ID] = true
				running++
				go func(s *plan.Stage) { results <- stageResult{s, r.runStage(ctx, s)} }(s)
			}
		}
		if running == 0 {
			return fmt.Errorf("internal error: no stage can run")
		}
		res := <-results
		running--
		if res.err != nil {
			cancel()
			for ; running > 0; running-- {
				<-results
			}
			if ctx.Err() != nil && res.err == context.Canceled {
				return res.err
			}
			return res.err
		}
		done[res.stage.ID] = true
		r.release(res.stage)
	}
	return nil
}

func depsDone(s *plan.Stage, done map[string]bool) bool {
	for _, d := range s.Deps {
		if !done[d] {
			return false
		}
	}
	return true
}

func (r *run) runStage(ctx context.Context, s *plan.Stage) error {
	var err error
	switch s.Kind {
	case plan.Impulse:
		r.store(s.Outputs[0], engine.Impulse())
	case plan.Flatten:
		// SDK stages already wrote their part through flatten sinks.
		out := &engine.Data{}
		for _, in := range s.CopyInputs {
			out.AddAll(r.input(in))
		}
		r.store(s.Outputs[0], out)
	case plan.GBK:
		err = r.runGBK(s)
	case plan.SDK:
		err = r.runSDK(ctx, s)
	}
	if err != nil {
		return fmt.Errorf("stage %s (%s): %w", s.ID, r.stageName(s), err)
	}
	r.log.Debug("stage done", "stage", s.ID, "name", r.stageName(s), "inputs", s.Inputs, "outputs", s.Outputs, "transforms", s.Transforms)
	return nil
}

func (r *run) stageName(s *plan.Stage) string {
	t := r.plan.Components.GetTransforms()[s.Transforms[0]]
	if len(s.Transforms) == 1 {
		return t.GetUniqueName()
	}
	return fmt.Sprintf("%s and %d more", t.GetUniqueName(), len(s.Transforms)-1)
}

func (r *run) runGBK(s *plan.Stage) error {
	in := s.Inputs[0]
	wv, err := r.codec(in)
	if err != nil {
		return err
	}
	pc := r.plan.Components.GetPcollections()[in]
	ws := r.plan.Components.GetWindowingStrategies()[pc.GetWindowingStrategyId()]
	key := wv.Elem.Component(0)
	if key == nil {
		return fmt.Errorf("input %q of GroupByKey is not KV-coded (%s)", in, wv.Elem.URN())
	}
	out, err := engine.GroupByKey(r.input(in), engine.GroupSpec{
		In: wv, Key: key,
		Merging:    ws.GetWindowFn().GetUrn() == plan.URNSessions,
		OutputTime: ws.GetOutputTime(),
		Global:     wv.WindowKind() == coders.GlobalWindow,
	})
	if err != nil {
		return err
	}
	r.store(s.Outputs[0], out)
	return nil
}

func (r *run) codec(pc string) (*coders.WindowedValueCodec, error) {
	return coders.CompileWindowedValue(r.plan.Components.GetCoders(), r.plan.Wire[pc])
}

func (r *run) input(pc string) *engine.Data {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p := r.data[pc]; p != nil {
		return p.data
	}
	return &engine.Data{}
}

// store appends data to a PCollection: a flatten's output is written by
// several stages.
func (r *run) store(pc string, d *engine.Data) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.plan.Consumers[pc]
	if n == 0 {
		return
	}
	p := r.data[pc]
	if p == nil {
		p = &pcoll{data: &engine.Data{}, readers: n}
		r.data[pc] = p
	}
	p.data.AddAll(d)
}

// release drops inputs no remaining stage reads, so memory goes back as
// soon as a stage's input is consumed.
func (r *run) release(s *plan.Stage) {
	r.mu.Lock()
	defer r.mu.Unlock()
	drop := func(pc string) {
		if p := r.data[pc]; p != nil {
			if p.readers--; p.readers <= 0 {
				delete(r.data, pc)
			}
		}
	}
	for _, in := range s.Inputs {
		drop(in)
	}
	for _, si := range s.SideInputs {
		drop(si.PColl)
	}
}
