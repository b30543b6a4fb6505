package execute

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/fnapi"
	"github.com/beam-runner/beam-runner/harness"
	"github.com/beam-runner/beam-runner/runner/engine/userstate"
	"github.com/beam-runner/beam-runner/runner/jobs"
	"github.com/beam-runner/beam-runner/runner/metrics"
	"github.com/beam-runner/beam-runner/runner/plan"
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

	harnesses map[string]*harness.Harness // environment id -> harness
	handles   []worker.Handle
}

func newRun(ctx context.Context, opts Options, j *jobs.Job, pl *plan.Plan) (*run, error) {
	r := &run{
		opts: opts, log: opts.Logger.With("job", j.ID), job: j, plan: pl,
		metrics: metrics.NewStore(), state: userstate.NewStore(), harnesses: map[string]*harness.Harness{},
	}
	srv, err := fnapi.Start(fnapi.Config{
		Provision: r.provision,
		Log:       r.sdkLog,
		Retrieval: j.Retrieval,
	})
	if err != nil {
		return nil, err
	}
	r.srv = srv
	return r, nil
}

func (r *run) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, h := range r.handles {
		if err := h.Stop(ctx); err != nil {
			r.log.Debug("stopping worker", "err", err)
		}
	}
	r.srv.Stop()
}

// envs lists the environments SDK stages run in, sorted.
func (r *run) envs() []string {
	set := map[string]bool{}
	for _, s := range r.plan.Stages {
		if s.Kind == plan.SDK {
			set[s.Env] = true
		}
	}
	var out []string
	for e := range set {
		out = append(out, e)
	}
	sort.Strings(out)
	return out
}

// startWorkers starts one harness per environment and waits until each has
// connected, failing with the environment's name if one does not in time.
func (r *run) startWorkers(ctx context.Context) error {
	ep := r.srv.Endpoint()
	eps := worker.Endpoints{Control: ep, Logging: ep, Artifact: ep, Provision: ep}
	for i, envID := range r.envs() {
		env := r.plan.Components.GetEnvironments()[envID]
		id := fmt.Sprintf("%s-w%d", r.job.ID, i)
		w := r.srv.AddWorker(id)
		h, err := worker.Start(ctx, env, id, eps)
		if err != nil {
			return fmt.Errorf("starting environment %q: %w", envID, err)
		}
		r.handles = append(r.handles, h)
		if err := r.awaitWorker(ctx, envID, w, h); err != nil {
			return err
		}
		r.harnesses[envID] = harness.New(w)
	}
	return nil
}

func (r *run) awaitWorker(ctx context.Context, envID string, w *fnapi.Worker, h worker.Handle) error {
	timer := time.NewTimer(r.opts.WorkerStartTimeout)
	defer timer.Stop()
	select {
	case <-w.Connected():
		r.log.Info("worker connected", "env", envID, "worker", w.ID)
		return nil
	case <-h.Exited():
		return fmt.Errorf("environment %q: the worker process exited before connecting", envID)
	case <-timer.C:
		return fmt.Errorf("environment %q: worker %q did not connect within %v", envID, w.ID, r.opts.WorkerStartTimeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (r *run) provision(workerID string) (*fnpb.ProvisionInfo, error) {
	ep := func() *pipepb.ApiServiceDescriptor { return &pipepb.ApiServiceDescriptor{Url: r.srv.Endpoint()} }
	info := &fnpb.ProvisionInfo{
		PipelineOptions:  r.job.Options,
		RetrievalToken:   r.job.ID,
		LoggingEndpoint:  ep(),
		ArtifactEndpoint: ep(),
		ControlEndpoint:  ep(),
	}
	for _, envID := range r.envs() {
		env := r.plan.Components.GetEnvironments()[envID]
		info.Dependencies = append(info.Dependencies, env.GetDependencies()...)
		break
	}
	return info, nil
}

// sdkLog forwards SDK log entries to the runner's log and, from INFO up,
// to the job's message stream.
func (r *run) sdkLog(workerID string, e *fnpb.LogEntry) {
	lvl, imp := slog.LevelInfo, jobpb.JobMessage_JOB_MESSAGE_BASIC
	switch sev := e.GetSeverity(); {
	case sev >= fnpb.LogEntry_Severity_ERROR:
		lvl, imp = slog.LevelError, jobpb.JobMessage_JOB_MESSAGE_ERROR
	case sev >= fnpb.LogEntry_Severity_WARN:
		lvl, imp = slog.LevelWarn, jobpb.JobMessage_JOB_MESSAGE_WARNING
	case sev < fnpb.LogEntry_Severity_INFO:
		lvl, imp = slog.LevelDebug, jobpb.JobMessage_JOB_MESSAGE_DEBUG
	}
	r.log.Log(context.Background(), lvl, e.GetMessage(), "worker", workerID, "transform", e.GetTransformId(), "at", e.GetLogLocation())
	// With LOOPBACK the worker lives in the submitting program, which logs
	// the job's messages; forwarding those log lines as messages again
	// makes a loop whose messages nest and grow without end (GBs of
	// memory, and most of the CPU, on large jobs). Such lines quote our
	// "[worker]" prefix: they are not forwarded.
	if imp != jobpb.JobMessage_JOB_MESSAGE_DEBUG && !strings.Contains(e.GetMessage(), "["+workerID+"]") {
		r.job.Message(imp, fmt.Sprintf("[%s] %s", workerID, e.GetMessage()))
	}
}
