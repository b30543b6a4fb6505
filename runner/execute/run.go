package execute

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/beam-runner/beam-runner/runner/bundleio"
	"github.com/beam-runner/beam-runner/runner/spec"
	"github.com/beam-runner/beam-runner/runner/workers"

	"github.com/beam-runner/beam-runner/runner/jobs"
	"github.com/beam-runner/beam-runner/runner/metrics"
	"github.com/beam-runner/beam-runner/runner/plan"
	"github.com/beam-runner/beam-runner/runner/userstate"
)

// run is one executing job.
type run struct {
	opts    Options
	log     *slog.Logger
	job     *jobs.Job
	plan    *plan.Plan
	metrics *metrics.Store
	state   *userstate.Store
	drain   *drainSignal
	// savepoints carries savepoint requests to the driver; ended is
	// closed when the run's Execute returns, so none waits for it after.
	savepoints chan savepointReq
	ended      chan struct{}
	// resumedScaling is the autoscaler's memory in the checkpoint the job
	// resumed from (savedScaling); nil if none.
	resumedScaling []byte
	// concurrency records how many bundles of each stage ran at once.
	concurrency concurrency

	pool *workers.Pool // the job's SDK workers and their Fn API server
	// workers is pool, for the calls a failed bundle makes.
	workers workerOps
	// sinkCodecs are the wire codecs of SDK outputs, used by the driver
	// goroutine only (commit).
	sinkCodecs *bundleio.Codecs
	// orderedLists finds the element coders of ordered-list states.
	orderedLists userstate.Lookup
	// spill takes the job's spill (nil without a store); it is removed
	// whole when the run closes.
	spill *spec.Spill
	tl    *timeline // nil in tests that make runs by hand
	// streaming: the job has unbounded input (set with its engine).
	streaming bool
}

// newRun makes the run of job j, whose workers pool starts; log is the
// job's.
func newRun(opts Options, log *slog.Logger, j *jobs.Job, pl *plan.Plan, pool *workers.Pool) *run {
	r := &run{
		opts: opts, log: log, job: j, plan: pl,
		metrics: metrics.NewStore(), state: userstate.NewStore(), drain: newDrainSignal(),
		savepoints: make(chan savepointReq), ended: make(chan struct{}),
		pool: pool, workers: pool, sinkCodecs: bundleio.NewCodecs(pl), orderedLists: bundleio.OrderedLists(pl),
	}
	r.spill = opts.Memory.Open(j.ID)
	return r
}

func (r *run) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r.pool.Stop(ctx)
	r.tl.mark("stop_workers")
	r.pool.Close()
	r.tl.mark("stop_fn_api")
	r.dropSpill()
}

// dropSpill removes the job's spill, and with it whatever its GroupByKeys
// and pending input left there (a failed or cancelled job stops before
// reading everything back): its disk space is free when the job ends.
func (r *run) dropSpill() {
	if err := r.spill.Remove(); err != nil {
		r.log.Warn("removing the job's spill", "err", err)
	}
}

func (r *run) stageName(s *plan.Stage) string { return spec.StageName(r.plan, s) }

// concurrency counts running bundles per stage, the most seen at once and
// how many ran, which the job reports when it ends (it shows whether
// splitting and parallel bundles kept the cores busy, and what combiner
// trees combined).
type concurrency struct{ now, peak, total map[string]int }

func (c *concurrency) start(stage string) {
	if c.now == nil {
		c.now, c.peak, c.total = map[string]int{}, map[string]int{}, map[string]int{}
	}
	c.now[stage]++
	c.total[stage]++
	c.peak[stage] = max(c.peak[stage], c.now[stage])
}

func (c *concurrency) end(stage string) { c.now[stage]-- }

func (r *run) reportConcurrency() {
	for _, s := range r.plan.Stages {
		if n := r.concurrency.peak[s.ID]; n > 0 {
			r.log.Info("stage parallelism", "stage", s.ID, "name", r.stageName(s), "max_concurrent_bundles", n)
		}
		if ts, err := r.plan.TreeStage(s); err == nil && r.concurrency.total[ts.ID] > 0 {
			r.log.Info("combiner tree", "stage", s.ID, "name", r.stageName(s),
				"combine_bundles", r.concurrency.total[ts.ID], "max_concurrent_bundles", r.concurrency.peak[ts.ID])
		}
	}
}

// hotPagesServed counts the hot-key pages served, for tests and logs.
var hotPagesServed atomic.Int64

// hot is where the job's hot-key pages are served from, when it may
// have them.
func (r *run) hot() bundleio.Hot {
	if r.spill == nil || r.opts.Memory.Limit <= 0 {
		return bundleio.Hot{}
	}
	return bundleio.Hot{Pages: r.spill.Space(spec.HotSpace), Served: &hotPagesServed}
}

// envBundles caps the bundles at once of environments on worker pools
// at their workers (workers.Pool.EnvBundles); under autoscaling at the
// most they may grow to, so that new workers get bundles.
func (r *run) envBundles() map[string]int {
	out := r.pool.EnvBundles()
	if !r.pool.Scaling().On() {
		return out
	}
	for env, n := range out {
		_, hi := r.pool.Bounds(env)
		out[env] = max(n, hi)
	}
	return out
}

// scaledMax is, under autoscaling, each environment's most workers
// (spec.Config.ScaledMax); nil without.
func (r *run) scaledMax() map[string]int {
	if !r.pool.Scaling().On() {
		return nil
	}
	out := map[string]int{}
	for env := range r.pool.EnvWorkers() {
		_, out[env] = r.pool.Bounds(env)
	}
	return out
}
