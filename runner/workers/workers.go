// Package workers manages a job's SDK workers: it starts each environment's
// harnesses (locally or on worker pools), serves them the job's Fn API, routes
// bundles to them, and restarts lost ones.
package workers

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"

	"github.com/beam-runner/beam-runner/fnapi"
	"github.com/beam-runner/beam-runner/harness"
	"github.com/beam-runner/beam-runner/runner/jobs"
	"github.com/beam-runner/beam-runner/runner/placement"
	"github.com/beam-runner/beam-runner/runner/plan"
	"github.com/beam-runner/beam-runner/worker"
)

// Options configure how a job's SDK workers start and connect.
type Options struct {
	// StartTimeout bounds how long an environment's harness may take to
	// connect; 0 means two minutes.
	StartTimeout time.Duration
	// Environments is how SDK workers start (Docker, local SDK workers).
	Environments worker.Config
	// FnAPI is where each job's Fn API server listens and the address its
	// workers are told; the zero value is loopback only.
	FnAPI fnapi.Listen
	// Pools are worker pools by SDK (--worker_pools): environments of
	// those SDKs start their workers there, not on this machine.
	Pools placement.Pools
	// Scaling is the server's autoscaling (--autoscaling and its
	// bounds), which a job's options override; zero: off.
	Scaling jobs.Scaling
	// PoolRefresh is how often a running job resolves its pools' hosts
	// again, to use pods that joined and drain those that left
	// (members.go); 0 means every 10 s, negative never.
	PoolRefresh time.Duration
	// Lookup resolves a pool's host; nil: DNS.
	Lookup func(ctx context.Context, host string) ([]string, error)
}

// Pool is a job's SDK workers: its Fn API server, each environment's
// harnesses, which run its bundles, and the worker processes behind them,
// across restarts.
type Pool struct {
	opts Options
	log  *slog.Logger
	job  *jobs.Job
	plan *plan.Plan
	srv  *fnapi.Server // the job's Fn API server

	harnesses map[string]*Set         // environment id -> its harnesses
	workers   map[string][]*envWorker // environment id -> its workers
	// handles and byWorker (worker id -> its handle, restarts too) grow
	// as a restart, off the driver goroutine, starts workers.
	mu       sync.Mutex
	handles  []worker.Handle
	byWorker map[string]worker.Handle
	logTail  logTails
	launcher *worker.Launcher   // starts the environments' harnesses
	envOf    workerEnvs         // worker id -> environment id, for provision
	remotes  map[string]*remote // environment id -> its workers on worker pools
	// envIdx numbers the environments for worker ids; grown counts each
	// environment's scale-up starts (scale.go), under mu.
	envIdx map[string]int
	grown  map[string]int
	// scale is the job's autoscaling, bounds each environment's, both
	// set by Start.
	scale  jobs.Scaling
	bounds map[string][2]int
	// scaleCtx ends, and scaling waits for, the starts and drains of
	// Scale, when the job's workers stop.
	scaleCtx    context.Context
	scaleCancel context.CancelFunc
	scaling     sync.WaitGroup
}

// NewPool starts the job's Fn API server, where the workers that l starts
// (and those on worker pools) connect; no worker starts yet (Start).
func NewPool(opts Options, log *slog.Logger, j *jobs.Job, pl *plan.Plan, l *worker.Launcher) (*Pool, error) {
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 2 * time.Minute
	}
	p := &Pool{opts: opts, log: log, job: j, plan: pl, launcher: l,
		harnesses: map[string]*Set{}, workers: map[string][]*envWorker{}, byWorker: map[string]worker.Handle{},
		remotes: map[string]*remote{}, envIdx: map[string]int{}, grown: map[string]int{},
		bounds: map[string][2]int{}}
	p.scaleCtx, p.scaleCancel = context.WithCancel(context.Background())
	srv, err := fnapi.Start(fnapi.Config{
		Provision: p.provision,
		Log:       p.sdkLog,
		Retrieval: j.Retrieval,
		Listen:    opts.FnAPI,
		Logger:    log,
	})
	if err != nil {
		return nil, err
	}
	p.srv = srv
	return p, nil
}

// Stop stops every worker process the pool started, after ending the
// scale-ups and drains under way.
func (p *Pool) Stop(ctx context.Context) {
	p.scaleCancel()
	p.scaling.Wait()
	for _, rm := range p.remotes {
		rm.stop()
	}
	p.mu.Lock()
	handles := slices.Clone(p.handles)
	p.mu.Unlock()
	for _, h := range handles {
		if err := h.Stop(ctx); err != nil {
			p.log.Debug("stopping worker", "err", err)
		}
	}
}

// Close stops the job's Fn API server; call after Stop.
func (p *Pool) Close() { p.srv.Stop() }

// Workers is how many environments have harnesses.
func (p *Pool) Workers() int { return len(p.harnesses) }

// Harnesses is environment env's harnesses; nil if it has none.
func (p *Pool) Harnesses(env string) *Set { return p.harnesses[env] }

// AddDescriptor makes a descriptor known to the Fn API server and to
// environment env's harnesses, which register it with RegisterAdded.
func (p *Pool) AddDescriptor(env string, desc *fnpb.ProcessBundleDescriptor) {
	p.srv.AddDescriptor(desc)
	p.harnesses[env].Add(desc)
}

// Endpoint is the Fn API server's address, which descriptors name.
func (p *Pool) Endpoint() string { return p.srv.Endpoint() }

// RegisterAdded registers the descriptors added since the last call with
// every harness, environment by environment in order.
func (p *Pool) RegisterAdded(ctx context.Context) error {
	for _, env := range slices.Sorted(maps.Keys(p.harnesses)) {
		if err := p.harnesses[env].RegisterAdded(ctx); err != nil {
			return err
		}
	}
	return nil
}

// envWorker is the harness of one environment, across restarts.
type envWorker struct {
	envID    string
	base     string // worker id of the first start; restarts add -rN
	restarts int
	fw       *fnapi.Worker // the current worker
	handle   worker.Handle
	h        *harness.Harness // stable: Rebind moves it to a restarted worker
	slot     int              // its slot on the environment's board
}

// launch starts a harness for the environment as worker id and waits for
// it to connect.
func (p *Pool) launch(ctx context.Context, envID, id string) (*fnapi.Worker, worker.Handle, error) {
	w, h, err := p.startWorker(ctx, envID, id)
	if err != nil {
		return nil, nil, err
	}
	if err := p.awaitWorker(ctx, envID, w, h); err != nil {
		return nil, nil, err
	}
	watchExit(w, h)
	return w, h, nil
}

// watchExit turns a harness process's exit into its worker's failure, so
// the driver hears of it even when no stream breaks.
func watchExit(w *fnapi.Worker, h worker.Handle) {
	go func() {
		select {
		case <-h.Exited():
			w.Fail(fmt.Errorf("worker %q %s", w.ID, exitOf(h)))
		case <-w.Failed():
		}
	}()
}

func exitOf(h worker.Handle) string {
	if rep, ok := h.(worker.Reporter); ok && rep.Exit() != "" {
		return rep.Exit()
	}
	return "exited"
}

// RestartLost restarts the environment's worker that failed, if it is
// still current. It may wait for the new worker to connect; the driver
// calls it off its goroutine, one restart at a time.
func (p *Pool) RestartLost(ctx context.Context, envID, failed string) error {
	if rm := p.remotes[envID]; rm != nil {
		rm.lost(failed) // restarted on its pool meanwhile; the retry runs elsewhere
		return nil
	}
	p.mu.Lock()
	ews := slices.Clone(p.workers[envID]) // a scale-up or drain may change it
	p.mu.Unlock()
	for _, ew := range ews {
		if err := p.restart(ctx, ew, failed); err != nil {
			return err
		}
	}
	return nil
}

// restart replaces the environment's failed worker with a new one and
// moves its harness there. Failures of an already replaced worker (other
// bundles it ran) do not restart again.
func (p *Pool) restart(ctx context.Context, ew *envWorker, failed string) error {
	p.mu.Lock() // a drain (scale.go) reads ew's worker
	current, handle := ew.fw.ID == failed, ew.handle
	p.mu.Unlock()
	if !current {
		return nil
	}
	stopCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	handle.Stop(stopCtx)
	cancel()
	ew.restarts++
	id := fmt.Sprintf("%s-r%d", ew.base, ew.restarts)
	p.log.Warn("restarting worker", "env", ew.envID, "failed", failed, "new", id)
	w, h, err := p.launch(ctx, ew.envID, id)
	if err != nil {
		return fmt.Errorf("restarting the worker of environment %q: %w", ew.envID, err)
	}
	p.mu.Lock()
	ew.fw, ew.handle = w, h
	p.mu.Unlock()
	return ew.h.Rebind(ctx, w)
}

// DescribeLoss says how a lost worker ended: its exit status when the
// runner started its process (waiting a moment for the exit to be seen),
// else why its streams ended.
func (p *Pool) DescribeLoss(ctx context.Context, lost *harness.WorkerLost) string {
	for _, rm := range p.remotes {
		if addr, ok := rm.poolOfWorker(lost.Worker); ok {
			return fmt.Sprintf("%s (on worker pool %s)", lost.Cause.Error(), addr)
		}
	}
	if h := p.handle(lost.Worker); h != nil {
		if _, ok := h.(worker.Reporter); ok {
			select {
			case <-h.Exited():
				return fmt.Sprintf("worker %s %s", lost.Worker, exitOf(h))
			case <-time.After(2 * time.Second):
			case <-ctx.Done():
			}
		}
	}
	return lost.Cause.Error()
}

// WorkerOutput is the last log lines of a worker, and with output its
// process's last output lines, one line each, indented, for a job
// message. A log entry keeps its first line only: the SDK's message,
// which the job's error carries whole, would otherwise be printed again
// with its traceback.
func (p *Pool) WorkerOutput(workerID string, output bool) string {
	var lines []string
	if rep, ok := p.handle(workerID).(worker.Reporter); ok && output {
		lines = append(lines, rep.Output()...)
	}
	for _, l := range p.logTail.lines(workerID) {
		first, _, cut := strings.Cut(l, "\n")
		if cut {
			first += " …"
		}
		lines = append(lines, first)
	}
	return strings.Join(lines, "\n  ")
}

// logTails keeps each worker's last log lines, for errors.
type logTails struct {
	mu sync.Mutex
	m  map[string][]string
}

const logTailLines = 20

func (t *logTails) add(workerID, line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[string][]string{}
	}
	ls := append(t.m[workerID], line)
	if len(ls) > logTailLines {
		ls = append(ls[:0], ls[len(ls)-logTailLines:]...)
	}
	t.m[workerID] = ls
}

func (t *logTails) lines(workerID string) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.m[workerID]...)
}

// outputOf is a handle's last output lines, for errors.
func outputOf(h worker.Handle) string {
	rep, ok := h.(worker.Reporter)
	if !ok || len(rep.Output()) == 0 {
		return ""
	}
	return "; its last output:\n  " + strings.Join(rep.Output(), "\n  ")
}

// handle is worker id's handle; nil if the pool started none.
func (p *Pool) handle(id string) worker.Handle {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.byWorker[id]
}
