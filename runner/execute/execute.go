// Package execute runs a prepared job: it plans the pipeline, starts the
// environments, and drives stages through SDK harnesses until the job ends.
package execute

import (
	"context"
	"fmt"
	"github.com/beam-runner/beam-runner/runner/plan"
	"github.com/beam-runner/beam-runner/runner/spec"
	"google.golang.org/protobuf/proto"
	"log/slog"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/engine"
	"github.com/beam-runner/beam-runner/runner/jobs"
	"github.com/beam-runner/beam-runner/runner/workers"
	"google.golang.org/protobuf/types/known/structpb"
)

// Options configure the executor.
type Options struct {
	// Logger receives runner and SDK logs; nil uses slog.Default.
	Logger *slog.Logger
	// Parallelism is how many bundles of a stage run at once; 0 means twice
	// the number of cores.
	Parallelism int
	// MaxBundleAttempts is how many times a bundle that failed (its worker
	// died, or user code failed) may run; 0 means 4, like Dataflow batch.
	// User code failures run again within it only by the engine's retry
	// policy (engine.Retry).
	MaxBundleAttempts int
	// Memory bounds what a job holds in memory and says where the rest
	// spills.
	Memory spec.Memory
	// CombineTreeBytes is how many bytes of fresh accumulators a lifted
	// combine's GroupByKey takes in before it has the SDK combine them (a
	// combiner tree, runner/engine/agg/tree.go); 0 means the engine's
	// default, negative no tree.
	CombineTreeBytes int
	// FlowControl bounds streaming stages' queued input by holding their
	// sources (runner/engine/flowctl.go); nil: off.
	FlowControl *engine.FlowControl
	// CheckpointInterval is the least time between two checkpoints of a
	// streaming job with a durable record; 0 takes none.
	CheckpointInterval time.Duration
	// Workers is how SDK workers start and connect.
	Workers workers.Options
	// RateWindow is the sliding window of each stage's measured rates
	// (rates.go); 0 means autoscale.DefaultWindowMs.
	RateWindow time.Duration
}

// Executor implements jobs.Executor and jobs.Drainer.
type Executor struct {
	opts Options

	mu   sync.Mutex
	runs map[string]*run // running jobs by id, for Drain
}

// New returns an executor.
func New(opts Options) *Executor {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.MaxBundleAttempts == 0 {
		opts.MaxBundleAttempts = 4
	}
	if opts.Parallelism == 0 {
		opts.Parallelism = 2 * runtime.NumCPU()
	}
	return &Executor{opts: opts, runs: map[string]*run{}}
}

// Drain implements jobs.Drainer: the job's splittable DoFns checkpoint and
// from then on only process their truncated restrictions, so the job ends
// with everything it read processed.
func (e *Executor) Drain(jobID string) error {
	e.mu.Lock()
	r := e.runs[jobID]
	e.mu.Unlock()
	if r == nil {
		return fmt.Errorf("job %q is not running", jobID)
	}
	r.drain.set()
	return nil
}

// releaseDelay is how long after a job ends releaseMemory runs: its
// terminal state is published first.
const releaseDelay = 100 * time.Millisecond

// releasesPending counts the releaseMemory calls scheduled and not yet
// done, so a test that reads the heap waits until none can free it.
var releasesPending atomic.Int32

// releaseMemory returns the heap a finished job used to the OS once no job
// is running, so an idle server's RSS falls back to its idle size instead
// of keeping a large job's peak. Not while jobs run: it stops the world.
func (e *Executor) releaseMemory() {
	defer releasesPending.Add(-1)
	e.mu.Lock()
	idle := len(e.runs) == 0
	e.mu.Unlock()
	if idle && worthReleasing(heapReleasable()) {
		debug.FreeOSMemory()
	}
}

// releaseMin is the least heap a forced release must give back. Forcing
// one marks the whole live heap, which costs a long-lived server (a
// suite's thousands of jobs) a tenth of a second of CPU or more after
// every tiny job; Go's scavenger returns small amounts by itself.
const releaseMin = 64 << 20

// worthReleasing: the garbage and free heap a release would return to
// the OS reach releaseMin.
func worthReleasing(garbage, free uint64) bool {
	return garbage+free >= releaseMin
}

// heapReleasable reads the heap's dead objects not yet collected and its
// free spans not yet returned to the OS.
func heapReleasable() (garbage, free uint64) {
	s := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/gc/heap/live:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
	}
	metrics.Read(s)
	objects, live := s[0].Value.Uint64(), s[1].Value.Uint64()
	if objects > live {
		garbage = objects - live
	}
	return garbage, s[2].Value.Uint64()
}

// Resumable implements jobs.Resumer: a job can run again after a restart
// if the runner can start every environment its stages use.
func (e *Executor) Resumable(j *jobs.Job) error {
	return workers.Restartable(j.Pipeline)
}

// CheckOptions implements jobs.OptionChecker: the runner's own job
// options, judged as the job's start would judge them.
func (e *Executor) CheckOptions(opts *structpb.Struct) error {
	return workers.CheckOptions(opts, e.opts.Workers)
}

// Validate implements jobs.Executor: a pipeline is valid if it plans.
func (e *Executor) Validate(p *pipepb.Pipeline) error {
	_, err := e.Plan(p)
	return err
}

// Plan implements jobs.Planner: it validates p by planning it, and the
// plan comes back to Execute as the job's Prepared.
func (e *Executor) Plan(p *pipepb.Pipeline) (any, error) {
	if p == nil {
		return nil, fmt.Errorf("no pipeline given")
	}
	pl, err := spec.Plan(p)
	if err != nil {
		return nil, err
	}
	return pl, nil
}

// jobPlan is the plan of job j, whose pipeline is p once its anyof
// environments are resolved: the plan built at Prepare, given the
// environments as staged for the run (staging changes only their
// dependencies, which planning does not read). A job resumed after a
// restart has none, and one whose anyof environment was resolved plans
// again: its plan depends on the alternative chosen.
func jobPlan(j *jobs.Job, p *pipepb.Pipeline) (*plan.Plan, error) {
	pl, ok := j.Prepared.(*plan.Plan)
	if !ok || p != j.Pipeline {
		return spec.PlanStarting(p, jobs.StartStages(j.Options))
	}
	for id, env := range p.GetComponents().GetEnvironments() {
		if pl.Components.Environments == nil {
			pl.Components.Environments = map[string]*pipepb.Environment{}
		}
		pl.Components.Environments[id] = proto.Clone(env).(*pipepb.Environment)
	}
	return pl, nil
}

// Execute implements jobs.Executor.
func (e *Executor) Execute(ctx context.Context, j *jobs.Job) error {
	tl := newTimeline()
	defer tl.log(e.opts.Logger, j.ID) // last: after every phase below
	launcher, cleanup, err := workers.NewLauncher(e.opts.Workers.Environments, e.opts.Logger, j)
	if err != nil {
		return err
	}
	defer func() { cleanup(); tl.mark("cleanup") }() // last: after the workers using it stopped
	p, err := workers.ResolveEnvironments(ctx, launcher, j, j.Pipeline)
	if err != nil {
		return err
	}
	pl, err := jobPlan(j, p)
	if err != nil {
		return err
	}
	tl.mark("plan")
	log := e.opts.Logger.With("job", j.ID)
	pool, err := workers.NewPool(e.opts.Workers, log, j, pl, launcher)
	if err != nil {
		return err
	}
	r := newRun(e.opts, log, j, pl, pool)
	r.tl = tl
	tl.mark("fn_api")
	// Later, off the job's critical path: a forced collection took 4-14 ms
	// of every small job's time to DONE.
	defer func() {
		releasesPending.Add(1)
		time.AfterFunc(releaseDelay, e.releaseMemory)
	}()
	defer r.close()
	e.mu.Lock()
	e.runs[j.ID] = r
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		delete(e.runs, j.ID)
		e.mu.Unlock()
		close(r.ended)
	}()
	r.publishStages()
	if err := r.pool.Start(ctx); err != nil {
		return err
	}
	tl.mark("workers")
	j.Stats().SetWorkers(r.pool.Workers())
	j.Running()
	defer r.reportConcurrency()
	defer tl.mark("stages")
	return r.runStages(ctx)
}
