package execute

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/beam-runner/beam-runner/fnapi"
	"github.com/beam-runner/beam-runner/harness"
	"github.com/beam-runner/beam-runner/runner/jobs"
	"github.com/beam-runner/beam-runner/runner/plan"
	"github.com/beam-runner/beam-runner/worker"
)

// pool is a job's SDK workers: each environment's harnesses, which run
// its bundles, and the worker processes behind them, across restarts.
type pool struct {
	opts Options
	log  *slog.Logger
	job  *jobs.Job
	plan *plan.Plan
	srv  *fnapi.Server // set once the job's Fn API server runs

	harnesses map[string]*workerSet // environment id -> its harnesses
	handles   []worker.Handle
	workers   map[string][]*envWorker  // environment id -> its workers
	byWorker  map[string]worker.Handle // worker id -> its handle, restarts too
	logTail   logTails
	launcher  *worker.Launcher   // starts the environments' harnesses
	envOf     workerEnvs         // worker id -> environment id, for provision
	remotes   map[string]*remote // environment id -> its workers on worker pools
}

func newPool(opts Options, log *slog.Logger, j *jobs.Job, pl *plan.Plan) *pool {
	return &pool{opts: opts, log: log, job: j, plan: pl,
		harnesses: map[string]*workerSet{}, workers: map[string][]*envWorker{}, byWorker: map[string]worker.Handle{},
		remotes: map[string]*remote{}}
}

// stop stops every worker process the pool started.
func (r *pool) stop(ctx context.Context) {
	for _, rm := range r.remotes {
		rm.stop()
	}
	for _, h := range r.handles {
		if err := h.Stop(ctx); err != nil {
			r.log.Debug("stopping worker", "err", err)
		}
	}
}

// envWorker is the harness of one environment, across restarts.
type envWorker struct {
	envID    string
	base     string // worker id of the first start; restarts add -rN
	restarts int
	fw       *fnapi.Worker // the current worker
	handle   worker.Handle
	h        *harness.Harness // stable: Rebind moves it to a restarted worker
}

// launch starts a harness for the environment as worker id and waits for
// it to connect.
func (r *pool) launch(ctx context.Context, envID, id string) (*fnapi.Worker, worker.Handle, error) {
	w, h, err := r.startWorker(ctx, envID, id)
	if err != nil {
		return nil, nil, err
	}
	if err := r.awaitWorker(ctx, envID, w, h); err != nil {
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

// restartLost restarts the environment's worker that failed, if it is
// still current.
func (r *pool) restartLost(ctx context.Context, envID, failed string) error {
	if rm := r.remotes[envID]; rm != nil {
		rm.lost(failed) // restarted on its pool meanwhile; the retry runs elsewhere
		return nil
	}
	for _, ew := range r.workers[envID] {
		if err := r.restart(ctx, ew, failed); err != nil {
			return err
		}
	}
	return nil
}

// restart replaces the environment's failed worker with a new one and
// moves its harness there. Failures of an already replaced worker (other
// bundles it ran) do not restart again.
func (r *pool) restart(ctx context.Context, ew *envWorker, failed string) error {
	if ew.fw.ID != failed {
		return nil
	}
	stopCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	ew.handle.Stop(stopCtx)
	cancel()
	ew.restarts++
	id := fmt.Sprintf("%s-r%d", ew.base, ew.restarts)
	r.log.Warn("restarting worker", "env", ew.envID, "failed", failed, "new", id)
	w, h, err := r.launch(ctx, ew.envID, id)
	if err != nil {
		return fmt.Errorf("restarting the worker of environment %q: %w", ew.envID, err)
	}
	ew.fw, ew.handle = w, h
	return ew.h.Rebind(ctx, w)
}

// describeLoss says how a lost worker ended: its exit status when the
// runner started its process (waiting a moment for the exit to be seen),
// else why its streams ended.
func (r *pool) describeLoss(ctx context.Context, lost *harness.WorkerLost) string {
	for _, rm := range r.remotes {
		if addr, ok := rm.poolOfWorker(lost.Worker); ok {
			return fmt.Sprintf("%s (on worker pool %s)", lost.Cause.Error(), addr)
		}
	}
	if h := r.byWorker[lost.Worker]; h != nil {
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

// workerOutput is the last log lines of a worker, and with output its
// process's last output lines, one line each, indented, for a job
// message. A log entry keeps its first line only: the SDK's message,
// which the job's error carries whole, would otherwise be printed again
// with its traceback.
func (r *pool) workerOutput(workerID string, output bool) string {
	var lines []string
	if rep, ok := r.byWorker[workerID].(worker.Reporter); ok && output {
		lines = append(lines, rep.Output()...)
	}
	for _, l := range r.logTail.lines(workerID) {
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

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
