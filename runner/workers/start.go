package workers

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
	"github.com/beam-runner/beam-runner/internal/textclip"
	"github.com/beam-runner/beam-runner/runner/jobs"
	"github.com/beam-runner/beam-runner/runner/stagekind"
	"github.com/beam-runner/beam-runner/worker"
)

// envs lists the environments SDK stages run in, sorted.
func (p *Pool) envs() []string {
	set := map[string]bool{}
	for _, s := range p.plan.Stages {
		if s.Kind == stagekind.SDK {
			set[s.Env] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// Start starts each environment's harnesses (see WorkersOption) and
// waits until each has connected, failing with the environment's name if
// one does not in time.
func (p *Pool) Start(ctx context.Context) error {
	pools, err := jobPools(p.opts.Pools, p.job.Options)
	if err != nil {
		return err
	}
	if p.scale, err = jobs.JobScaling(p.job.Options, serverScaling(p.opts)); err != nil {
		return err
	}
	for i, envID := range p.envs() {
		p.envIdx[envID] = i
		env := p.plan.Components.GetEnvironments()[envID]
		sdk, remote, err := p.poolsFor(ctx, envID, env, pools)
		if err != nil {
			return err
		}
		if remote != nil {
			if err := p.startRemote(ctx, i, envID, sdk, pools[sdk], remote, env); err != nil {
				return err
			}
			_, lo, hi, _ := jobs.EnvWorkers(p.job.Options, env, p.scale)
			p.bounds[envID] = [2]int{lo, max(hi, p.remotes[envID].slots())}
			continue
		}
		n, lo, hi, err := jobs.EnvWorkers(p.job.Options, env, p.scale)
		if err != nil {
			return err
		}
		p.bounds[envID] = [2]int{lo, hi}
		// Start all, then wait: SDK processes boot in parallel.
		var started []*envWorker
		for k := 0; k < n; k++ {
			id := workerID(p.job.ID, i, k)
			w, h, err := p.startWorker(ctx, envID, id)
			if err != nil {
				return err
			}
			started = append(started, &envWorker{envID: envID, base: id, fw: w, handle: h, slot: k})
		}
		var hs []*harness.Harness
		for _, ew := range started {
			if err := p.awaitWorker(ctx, envID, ew.fw, ew.handle); err != nil {
				return err
			}
			watchExit(ew.fw, ew.handle)
			ew.h = harness.New(ew.fw)
			hs = append(hs, ew.h)
		}
		p.mu.Lock()
		p.workers[envID] = started
		p.mu.Unlock()
		p.harnesses[envID] = newSet(hs)
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
func (p *Pool) startWorker(ctx context.Context, envID, id string) (*fnapi.Worker, worker.Handle, error) {
	ep := p.srv.Endpoint()
	eps := worker.Endpoints{Control: ep, Logging: ep, Artifact: ep, Provision: ep}
	env := p.plan.Components.GetEnvironments()[envID]
	w := p.srv.AddWorker(id)
	p.envOf.set(id, envID)
	h, err := p.launcher.Start(ctx, envID, env, id, eps)
	if err != nil {
		return nil, nil, fmt.Errorf("starting environment %q: %w", envID, err)
	}
	p.mu.Lock()
	p.handles = append(p.handles, h)
	p.byWorker[id] = h
	p.mu.Unlock()
	return w, h, nil
}

func (p *Pool) awaitWorker(ctx context.Context, envID string, w *fnapi.Worker, h worker.Handle) error {
	timer := time.NewTimer(p.opts.StartTimeout)
	defer timer.Stop()
	select {
	case <-w.Connected():
		p.log.Info("worker connected", "env", envID, "worker", w.ID)
		return nil
	case <-h.Exited():
		return fmt.Errorf("environment %q: worker %q %s before connecting%s", envID, w.ID, exitOf(h), outputOf(h))
	case <-timer.C:
		return fmt.Errorf("environment %q: worker %q did not connect within %v", envID, w.ID, p.opts.StartTimeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *Pool) provision(workerID string) (*fnpb.ProvisionInfo, error) {
	ep := func() *pipepb.ApiServiceDescriptor { return &pipepb.ApiServiceDescriptor{Url: p.srv.Endpoint()} }
	info := &fnpb.ProvisionInfo{
		PipelineOptions:  p.job.Options,
		RetrievalToken:   p.job.ID,
		LoggingEndpoint:  ep(),
		ArtifactEndpoint: ep(),
		ControlEndpoint:  ep(),
	}
	if envID, ok := p.envOf.get(workerID); ok {
		info.Dependencies = p.plan.Components.GetEnvironments()[envID].GetDependencies()
	}
	return info, nil
}

// sdkLog forwards SDK log entries to the runner's log and, from INFO up,
// to the job's message stream at DETAILED importance. Clients log job
// messages they receive, and a LOOPBACK harness living in the client
// forwards the client's logs back here: DETAILED messages are logged by
// clients at debug level, which is not forwarded again, so no entry can
// echo back and forth.
func (p *Pool) sdkLog(workerID string, e *fnpb.LogEntry) {
	lvl := slog.LevelInfo
	switch sev := e.GetSeverity(); {
	case sev >= fnpb.LogEntry_Severity_ERROR:
		lvl = slog.LevelError
	case sev >= fnpb.LogEntry_Severity_WARN:
		lvl = slog.LevelWarn
	case sev < fnpb.LogEntry_Severity_INFO:
		lvl = slog.LevelDebug
	}
	p.log.Log(context.Background(), lvl, e.GetMessage(), "worker", workerID, "transform", e.GetTransformId(), "at", e.GetLogLocation())
	p.logTail.add(workerID, fmt.Sprintf("%s %s", e.GetSeverity(), textclip.Clip(e.GetMessage(), 4000)))
	if lvl > slog.LevelDebug && !echoedJobMessage(e.GetMessage(), workerID) {
		p.job.Message(jobpb.JobMessage_JOB_MESSAGE_DETAILED, fmt.Sprintf("[%s] %s: %s", workerID, lvl, e.GetMessage()))
	}
}

// echoedJobMessage recognises a job message a client logged and its
// loopback harness sent back (the Go client prefixes them with their time
// and id, and quote our "[worker]" prefix), so it is not turned into a job
// message again.
func echoedJobMessage(msg, workerID string) bool {
	return strings.HasPrefix(msg, "(time=") || strings.HasPrefix(msg, "(id=") || strings.Contains(msg, "["+workerID+"]")
}
