//go:build faults

package faults

import (
	"bytes"
	"context"
	"log/slog"
	"math/rand"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/beam-runner/beam-runner/runner/execute"
	"github.com/beam-runner/beam-runner/runner/server"
	"github.com/beam-runner/beam-runner/runner/workers"
	"github.com/beam-runner/beam-runner/testsupport/jobtest"
	"github.com/beam-runner/beam-runner/testsupport/testkit"
	"github.com/beam-runner/beam-runner/testsupport/testwait"
)

func TestKilledWorkersDoNotChangeOutput(t *testing.T) {
	py := python(t)
	n, kills := testkit.EnvInt("FAULTS_ELEMENTS", 300000), testkit.EnvInt("FAULTS_KILLS", 3)
	seed := int64(testkit.EnvInt("FAULTS_SEED", int(time.Now().UnixNano()%1e6)))
	t.Logf("elements %d, kills per run %d, seed %d (FAULTS_SEED)", n, kills, seed)
	rng := rand.New(rand.NewSource(seed))
	srv := startServer(t, 4)
	pool := startPool(t, py)
	external := []string{"--environment_type=EXTERNAL", "--environment_config=" + pool}
	process := []string{"--environment_type=PROCESS", `--environment_config={"command": "` + bootScript(t, py) + `"}`}

	clean, took := runJob(t, py, srv, n, external, nil)
	t.Run("EXTERNAL", func(t *testing.T) {
		got, _ := runJob(t, py, srv, n, external, spread(rng, kills, took))
		testkit.RequireSame(t, got, clean)
	})
	t.Run("PROCESS", func(t *testing.T) {
		got, _ := runJob(t, py, srv, n, process, spread(rng, kills, took))
		testkit.RequireSame(t, got, clean)
	})
	t.Run("PROCESS one attempt", func(t *testing.T) {
		once := startServer(t, 1)
		k := spread(rng, 1, took)
		out, err := runJobErr(t, py, once, n, process, k)
		if err == nil {
			t.Fatalf("job succeeded with a worker killed and one attempt per bundle (kills: %d)", k.done)
		}
		for _, want := range []string{"signal 9", "attempt 1 of 1"} {
			if !strings.Contains(out, want) {
				t.Errorf("the client's error does not say %q:\n%s", want, testkit.Tail(out, 40))
			}
		}
	})
}

// A DoFn the workers cannot import fails the job within 15 s of its start
// on the server, with the worker's ModuleNotFoundError in the client's
// error (it used to hang forever). The client's own start-up (importing
// Beam, building the pipeline) is not the job's, and varies with the
// machine's load: it is bounded only loosely.
func TestMissingModuleFailsFast(t *testing.T) {
	py := python(t)
	s := startServer(t, 4)
	env := []string{"--environment_type=EXTERNAL", "--environment_config=" + startPool(t, py)}
	dir := t.TempDir()
	mod := "import apache_beam as beam\n\nclass Double(beam.DoFn):\n  def process(self, x):\n    yield 2 * x\n"
	if err := os.WriteFile(filepath.Join(dir, "secretmod.py"), []byte(mod), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := append([]string{"missing_module.py", dir, "--runner=PortableRunner", "--job_endpoint=" + s.endpoint}, env...)
	cmd := testkit.PythonClient(ctx, t, py, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	t.Logf("the client ended in %v", took.Round(time.Millisecond))
	if err == nil {
		t.Fatal("the job succeeded without the module")
	}
	if !strings.Contains(out.String(), "ModuleNotFoundError") || !strings.Contains(out.String(), "FAILED") {
		t.Errorf("the client's error lacks FAILED and ModuleNotFoundError:\n%s", testkit.Tail(out.String(), 30))
	}
	ran, ok := s.conns.jobTook()
	if !ok {
		t.Fatal("the server logged no job start and end")
	}
	t.Logf("the job ran %v on the server", ran.Round(time.Millisecond))
	if ran > 15*time.Second {
		t.Errorf("the job took %v to fail, want at most 15s", ran)
	}
	if took > time.Minute {
		t.Errorf("the client took %v to end", took)
	}
}

// srv is an in-process job server and the workers it reported connected.
type srv struct {
	endpoint string
	conns    *connLog
}

func startServer(t *testing.T, attempts int) *srv {
	conns := &connLog{at: map[string]time.Time{}}
	logDir := os.Getenv("FAULTS_LOGDIR") // kept for inspection when set
	if logDir == "" {
		logDir = t.TempDir()
	}
	logf, err := os.CreateTemp(logDir, "server-*.log")
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(&watchHandler{Handler: slog.NewTextHandler(logf, nil), conns: conns})
	addr, _ := jobtest.Serve(t, server.Config{
		Executor:     execute.New(execute.Options{Logger: log, MaxBundleAttempts: attempts, Workers: workers.Options{StartTimeout: time.Minute}}),
		Logger:       log,
		ArtifactRoot: t.TempDir(),
	})
	return &srv{endpoint: addr, conns: conns}
}

// runJob runs the pipeline and returns its output and how long it took;
// the job must succeed.
func runJob(t *testing.T, py string, s *srv, n int, env []string, k *killer) ([]byte, time.Duration) {
	t.Helper()
	dir := t.TempDir()
	start := time.Now()
	out, err := runJobIn(t, dir, py, s, n, env, k)
	took := time.Since(start)
	if err != nil {
		t.Fatalf("job failed: %v\n%s", err, testkit.Tail(out, 60))
	}
	if k != nil && k.done < len(k.at) {
		t.Fatalf("the job ended after %d of %d kills", k.done, len(k.at))
	}
	b, err := os.ReadFile(filepath.Join(dir, "out.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return sortLines(b), took
}

// sortLines orders a text output: the order elements are written in is
// not part of a pipeline's result.
func sortLines(b []byte) []byte {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	sort.Strings(lines)
	return []byte(strings.Join(lines, "\n") + "\n")
}

func runJobErr(t *testing.T, py string, s *srv, n int, env []string, k *killer) (string, error) {
	return runJobIn(t, t.TempDir(), py, s, n, env, k)
}

func runJobIn(t *testing.T, dir, py string, s *srv, n int, env []string, k *killer) (string, error) {
	args := append([]string{"pipeline.py", filepath.Join(dir, "out.txt"), strconv.Itoa(n),
		"--runner=PortableRunner", "--job_endpoint=" + s.endpoint}, env...)
	ctx, cancel := context.WithTimeout(context.Background(), jobLimit)
	defer cancel()
	cmd := testkit.PythonClient(ctx, t, py, args...)
	cmd.Cancel = func() error {
		dumpGoroutines(t) // a hang: show where the runner waits
		return cmd.Process.Kill()
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	if k != nil {
		wg.Add(1)
		go func() { defer wg.Done(); k.run(t, s.conns, stop) }()
	}
	err := cmd.Wait()
	close(stop)
	wg.Wait()
	kills := 0
	if k != nil {
		kills = k.done
	}
	t.Logf("job ran %v with %d worker(s) killed", time.Since(start).Round(time.Millisecond), kills)
	return out.String(), err
}

// jobLimit bounds one job; a job that takes longer hangs.
const jobLimit = 5 * time.Minute

// dumpGoroutines logs every goroutine's stack, the runner's included (it
// runs in this process).
func dumpGoroutines(t *testing.T) {
	var b bytes.Buffer
	pprof.Lookup("goroutine").WriteTo(&b, 2)
	t.Logf("the job passed %v; goroutines:\n%s", jobLimit, b.String())
}

// killer SIGKILLs the SDK harness process of the connected worker at
// planned moments of a job, each at least minUp after that worker
// connected so the kill lands while it works, not while it starts.
type killer struct {
	at   []time.Duration // kill times from the job's start, ascending
	done int
}

const minUp = 800 * time.Millisecond

// spread plans n kills over the first half of a job expected to take
// about d (the machine's load makes d vary run to run): one in each n-th
// of that, at a random point of its middle half. Spreading them keeps one
// bundle from taking every kill, which would rightly fail the job once its
// attempts ran out.
func spread(rng *rand.Rand, n int, d time.Duration) *killer {
	k := &killer{}
	slot := d / 2 / time.Duration(n)
	for i := 0; i < n; i++ {
		k.at = append(k.at, time.Duration(i)*slot+slot/4+time.Duration(rng.Int63n(int64(slot/2)+1)))
	}
	return k
}

func (k *killer) run(t *testing.T, conns *connLog, stop <-chan struct{}) {
	start := time.Now()
	for k.done < len(k.at) {
		select {
		case <-stop:
			return
		case <-time.After(100 * time.Millisecond):
		}
		id, since, ok := conns.latest()
		if time.Since(start) < k.at[k.done] || !ok || time.Since(since) < minUp {
			continue
		}
		pids := harnessPids(id)
		if len(pids) == 0 {
			continue
		}
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		t.Logf("killed worker %s (pid %v) at %v, %v after it connected", id, pids,
			time.Since(start).Round(time.Millisecond), time.Since(since).Round(time.Millisecond))
		conns.forget(id)
		k.done++
	}
}

// harnessPids finds the Python SDK harness processes of one worker, by
// the worker id on their command line (pool workers and our boot script
// both start `SdkHarness(..., worker_id="ID")`).
func harnessPids(workerID string) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cl, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		s := string(bytes.ReplaceAll(cl, []byte{0}, []byte{' '}))
		if strings.Contains(s, "SdkHarness(") && strings.Contains(s, `worker_id="`+workerID+`"`) {
			out = append(out, pid)
		}
	}
	return out
}

// connLog records when each worker connected, from the runner's log.
type connLog struct {
	mu sync.Mutex
	at map[string]time.Time
	// jobStart and jobEnd are when the server last started and ended a job.
	jobStart, jobEnd time.Time
}

func (c *connLog) job(start bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if start {
		c.jobStart = time.Now()
	} else {
		c.jobEnd = time.Now()
	}
}

// jobTook is how long the last job ran on the server.
func (c *connLog) jobTook() (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.jobEnd.Sub(c.jobStart), !c.jobStart.IsZero() && c.jobEnd.After(c.jobStart)
}

func (c *connLog) add(id string) {
	c.mu.Lock()
	c.at[id] = time.Now()
	c.mu.Unlock()
}

func (c *connLog) forget(id string) {
	c.mu.Lock()
	delete(c.at, id)
	c.mu.Unlock()
}

func (c *connLog) latest() (string, time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var id string
	var at time.Time
	for w, t := range c.at {
		if t.After(at) {
			id, at = w, t
		}
	}
	return id, at, id != ""
}

// watchHandler passes records on and notes "worker connected", "job
// starting" and "job ended" ones.
type watchHandler struct {
	slog.Handler
	conns *connLog
}

func (h *watchHandler) Handle(ctx context.Context, r slog.Record) error {
	switch r.Message {
	case "job starting", "job ended":
		h.conns.job(r.Message == "job starting")
	}
	if r.Message == "worker connected" {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "worker" {
				h.conns.add(a.Value.String())
			}
			return true
		})
	}
	return h.Handler.Handle(ctx, r)
}

func (h *watchHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &watchHandler{Handler: h.Handler.WithAttrs(as), conns: h.conns}
}

func (h *watchHandler) WithGroup(name string) slog.Handler {
	return &watchHandler{Handler: h.Handler.WithGroup(name), conns: h.conns}
}

// python is the real interpreter (not a pyenv shim, whose children would
// not be the pool) with apache_beam importable.
func python(t *testing.T) string {
	bin := os.Getenv("PYTHON")
	if bin == "" {
		bin = "python3"
	}
	out, err := exec.Command(bin, "-c", "import sys, apache_beam; print(sys.executable)").Output()
	if err != nil {
		t.Fatalf("the fault check needs Python with apache_beam (scripts/setup.sh installs it): %v", err)
	}
	return strings.TrimSpace(string(out))
}

// startPool starts Beam's Python worker pool on a free port; its workers
// are its child processes.
func startPool(t *testing.T, py string) string {
	port := testkit.FreePort(t)
	cmd := exec.Command(py, "-m", "apache_beam.runners.worker.worker_pool_main", "--service_port="+strconv.Itoa(port))
	logf, err := os.Create(filepath.Join(t.TempDir(), "pool.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its workers die with it
	cmd.Dir = t.TempDir()                                 // nothing of ours on its path
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	addr := "localhost:" + strconv.Itoa(port)
	testwait.NoErr(t, 60*time.Second, "the worker pool to listen on "+addr, func() error {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err
	})
	return addr
}

// bootScript is a PROCESS environment command: it takes the SDK boot
// flags and runs a Python SDK harness, as the pool does.
func bootScript(t *testing.T, py string) string {
	path := filepath.Join(t.TempDir(), "boot.sh")
	script := `#!/bin/sh
for a in "$@"; do
  case "$a" in
    --id=*) ID="${a#--id=}" ;;
    --control_endpoint=*) CONTROL="${a#--control_endpoint=}" ;;
  esac
done
exec "` + py + `" -c "from apache_beam.runners.worker.sdk_worker import SdkHarness; SdkHarness(\"$CONTROL\", worker_id=\"$ID\").run()"
`
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}
