package execute

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/fnapi"
	"github.com/beam-runner/beam-runner/harness"
	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/runner/jobs"
	"github.com/beam-runner/beam-runner/runner/metrics"
	"github.com/beam-runner/beam-runner/runner/plan"
	"github.com/beam-runner/beam-runner/runner/stagekind"
	"github.com/beam-runner/beam-runner/runner/store"
	"github.com/beam-runner/beam-runner/runner/userstate"
	"github.com/beam-runner/beam-runner/worker"
)

// run is one executing job.
type run struct {
	opts    Options
	log     *slog.Logger
	job     *jobs.Job
	plan    *plan.Plan
	srv     *fnapi.Server
	metrics *metrics.Store
	state   *userstate.Store
	drain   *drainSignal
	// concurrency records how many bundles of each stage ran at once.
	concurrency concurrency

	pool *pool // the job's SDK workers
	// sinkCodecs are the wire codecs of SDK outputs, used by the driver
	// goroutine only (commit).
	sinkCodecs map[string]*coders.WindowedValueCodec
	// scratch takes the job's spill (nil without a store); it is removed
	// whole when the run closes.
	scratch *store.Scratch
	tl      *timeline // nil in tests that make runs by hand
}

func newRun(ctx context.Context, opts Options, j *jobs.Job, pl *plan.Plan) (*run, error) {
	log := opts.Logger.With("job", j.ID)
	r := &run{
		opts: opts, log: log, job: j, plan: pl,
		metrics: metrics.NewStore(), state: userstate.NewStore(), drain: newDrainSignal(),
		pool: newPool(opts, log, j, pl),
	}
	srv, err := fnapi.Start(fnapi.Config{
		Provision: r.pool.provision,
		Log:       r.pool.sdkLog,
		Retrieval: j.Retrieval,
		Listen:    opts.FnAPI,
		Logger:    log,
	})
	if err != nil {
		return nil, err
	}
	r.srv, r.pool.srv = srv, srv
	if opts.Store != nil {
		r.scratch = opts.Store.Scratch(j.ID)
	}
	return r, nil
}

func (r *run) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r.pool.stop(ctx)
	r.tl.mark("stop_workers")
	r.srv.Stop()
	r.tl.mark("stop_fn_api")
	r.dropSpill()
}

// envs lists the environments SDK stages run in, sorted.
func (r *pool) envs() []string {
	set := map[string]bool{}
	for _, s := range r.plan.Stages {
		if s.Kind == stagekind.SDK {
			set[s.Env] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// startWorkers starts each environment's harnesses (see WorkersOption) and
// waits until each has connected, failing with the environment's name if
// one does not in time.
func (r *pool) startWorkers(ctx context.Context) error {
	pools, err := jobPools(r.opts.WorkerPools, r.job.Options)
	if err != nil {
		return err
	}
	for i, envID := range r.envs() {
		env := r.plan.Components.GetEnvironments()[envID]
		sdk, remote, err := r.poolsFor(ctx, envID, env, pools)
		if err != nil {
			return err
		}
		if remote != nil {
			if err := r.startRemote(ctx, i, envID, sdk, remote, env); err != nil {
				return err
			}
			continue
		}
		n, err := workersPerEnv(r.job.Options, env)
		if err != nil {
			return err
		}
		// Start all, then wait: SDK processes boot in parallel.
		var started []*envWorker
		for k := 0; k < n; k++ {
			id := workerID(r.job.ID, i, k)
			w, h, err := r.startWorker(ctx, envID, id)
			if err != nil {
				return err
			}
			started = append(started, &envWorker{envID: envID, base: id, fw: w, handle: h})
		}
		var hs []*harness.Harness
		for _, ew := range started {
			if err := r.awaitWorker(ctx, envID, ew.fw, ew.handle); err != nil {
				return err
			}
			watchExit(ew.fw, ew.handle)
			ew.h = harness.New(ew.fw)
			hs = append(hs, ew.h)
		}
		r.workers[envID] = started
		r.harnesses[envID] = newWorkerSet(hs)
	}
	return nil
}

// workerID names environment i's k-th worker; the first keeps the name a
// lone worker always had.
func workerID(job string, i, k int) string {
	if k == 0 {
		return fmt.Sprintf("%s-w%d", job, i)
	}
	return fmt.Sprintf("%s-w%d.%d", job, i, k)
}

// startWorker starts a harness for the environment as worker id, without
// waiting for it to connect.
func (r *pool) startWorker(ctx context.Context, envID, id string) (*fnapi.Worker, worker.Handle, error) {
	ep := r.srv.Endpoint()
	eps := worker.Endpoints{Control: ep, Logging: ep, Artifact: ep, Provision: ep}
	env := r.plan.Components.GetEnvironments()[envID]
	w := r.srv.AddWorker(id)
	r.envOf.set(id, envID)
	h, err := r.launcher.Start(ctx, envID, env, id, eps)
	if err != nil {
		return nil, nil, fmt.Errorf("starting environment %q: %w", envID, err)
	}
	r.handles = append(r.handles, h)
	r.byWorker[id] = h
	return w, h, nil
}

func (r *pool) awaitWorker(ctx context.Context, envID string, w *fnapi.Worker, h worker.Handle) error {
	timer := time.NewTimer(r.opts.WorkerStartTimeout)
	defer timer.Stop()
	select {
	case <-w.Connected():
		r.log.Info("worker connected", "env", envID, "worker", w.ID)
		return nil
	case <-h.Exited():
		return fmt.Errorf("environment %q: worker %q %s before connecting%s", envID, w.ID, exitOf(h), outputOf(h))
	case <-timer.C:
		return fmt.Errorf("environment %q: worker %q did not connect within %v", envID, w.ID, r.opts.WorkerStartTimeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (r *pool) provision(workerID string) (*fnpb.ProvisionInfo, error) {
	ep := func() *pipepb.ApiServiceDescriptor { return &pipepb.ApiServiceDescriptor{Url: r.srv.Endpoint()} }
	info := &fnpb.ProvisionInfo{
		PipelineOptions:  r.job.Options,
		RetrievalToken:   r.job.ID,
		LoggingEndpoint:  ep(),
		ArtifactEndpoint: ep(),
		ControlEndpoint:  ep(),
	}
	if envID, ok := r.envOf.get(workerID); ok {
		info.Dependencies = r.plan.Components.GetEnvironments()[envID].GetDependencies()
	}
	return info, nil
}

// sdkLog forwards SDK log entries to the runner's log and, from INFO up,
// to the job's message stream at DETAILED importance. Clients log job
// messages they receive, and a LOOPBACK harness living in the client
// forwards the client's logs back here: DETAILED messages are logged by
// clients at debug level, which is not forwarded again, so no entry can
// echo back and forth.
func (r *pool) sdkLog(workerID string, e *fnpb.LogEntry) {
	lvl := slog.LevelInfo
	switch sev := e.GetSeverity(); {
	case sev >= fnpb.LogEntry_Severity_ERROR:
		lvl = slog.LevelError
	case sev >= fnpb.LogEntry_Severity_WARN:
		lvl = slog.LevelWarn
	case sev < fnpb.LogEntry_Severity_INFO:
		lvl = slog.LevelDebug
	}
	r.log.Log(context.Background(), lvl, e.GetMessage(), "worker", workerID, "transform", e.GetTransformId(), "at", e.GetLogLocation())
	r.logTail.add(workerID, fmt.Sprintf("%s %s", e.GetSeverity(), truncate(e.GetMessage(), 4000)))
	if lvl > slog.LevelDebug && !echoedJobMessage(e.GetMessage(), workerID) {
		r.job.Message(jobpb.JobMessage_JOB_MESSAGE_DETAILED, fmt.Sprintf("[%s] %s: %s", workerID, lvl, e.GetMessage()))
	}
}

// echoedJobMessage recognises a job message a client logged and its
// loopback harness sent back (the Go client prefixes them with their time
// and id, and quote our "[worker]" prefix), so it is not turned into a job
// message again.
func echoedJobMessage(msg, workerID string) bool {
	return strings.HasPrefix(msg, "(time=") || strings.HasPrefix(msg, "(id=") || strings.Contains(msg, "["+workerID+"]")
}

// concurrency counts running bundles per stage, the most seen at once and
// how many ran, which the job reports when it ends (it shows whether
// splitting and parallel bundles kept the cores busy, and what combiner
// trees merged).
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
		if ms, err := r.plan.TreeStage(s); err == nil && r.concurrency.total[ms.ID] > 0 {
			r.log.Info("combiner tree", "stage", s.ID, "name", r.stageName(s),
				"merge_bundles", r.concurrency.total[ms.ID], "max_concurrent_bundles", r.concurrency.peak[ms.ID])
		}
	}
}
