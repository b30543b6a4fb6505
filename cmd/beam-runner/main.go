// Command beam-runner is the beam-runner job server. It accepts Prism's
// flags so it can stand in for Prism (e.g. Python's --prism_location).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	_ "net/http/pprof" // served only when --pprof_addr is set
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/beam-runner/beam-runner/runner/execute"
	"github.com/beam-runner/beam-runner/runner/jobs"
	"github.com/beam-runner/beam-runner/runner/server"
	"github.com/beam-runner/beam-runner/runner/store"
	"github.com/beam-runner/beam-runner/worker"
)

var (
	jobPort     = flag.Int("job_port", 8073, "job management service port")
	logLevel    = flag.String("log_level", "info", "minimum log level: debug, info, warn or error")
	logKind     = flag.String("log_kind", "dev", "log format: dev (human readable), json or text")
	serveHTTP   = flag.Bool("serve_http", true, "serve the web UI and /metrics on --web_port")
	webPort     = flag.Int("web_port", 8074, "port of the web UI, /metrics and (with --pprof) /debug/pprof; 0 picks a free one")
	webHosts    = flag.String("web_allowed_hosts", "", "comma-separated host names the web UI answers to besides localhost, 127.0.0.1 and [::1], e.g. the name of a proxy in front of it; requests naming any other host get 403")
	pprofOn     = flag.Bool("pprof", false, "serve /debug/pprof on --web_port")
	jmOverride  = flag.String("jm_override", "", "accepted for Prism compatibility; not supported")
	idleTimeout = flag.Duration("idle_shutdown_timeout", 0, "exit after no job has run for this long; 0 or negative: never")
	cpuProfile  = flag.String("cpuprofile", "", "write a CPU profile to this file")
	pprofAddr   = flag.String("pprof_addr", "", "also serve /debug/pprof on this address of its own (older form of --pprof)")
	artifactDir = flag.String("artifact_root", "", "directory for staged artifacts (default: a fresh private directory in $TMPDIR, removed at exit; roots of dead servers are removed)")
	maxFinished = flag.Int("max_finished_jobs", jobs.DefaultMaxFinishedJobs, "ended jobs kept, listed and saved; past it the oldest are forgotten (0: the default; negative: no cap)")
	maxPrepared = flag.Int64("max_prepared_bytes", jobs.DefaultMaxPreparedBytes, "cap on the pipeline bytes of prepared jobs not yet run; Prepare past it gets RESOURCE_EXHAUSTED (negative: no cap)")
	workerStart = flag.Duration("worker_start_timeout", 2*time.Minute, "how long an environment's SDK harness may take to connect before its job fails")
	maxAttempts = flag.Int("max_bundle_attempts", 4, "how many times a bundle whose worker died or whose user code failed may run before its job fails")
	memLimit    = flag.String("memory_limit", "", "bytes a job's GroupByKeys and pending bundle input may buffer before spilling to the store, e.g. 512MiB; default a quarter of the machine's memory; \"none\": no limit")
	mergeBytes  = flag.Int("combine_merge_bytes", 0, "bytes of accumulators a lifted combine's GroupByKey takes in before the SDK merges them, and merges the merged ones again (a combiner tree), so it holds about one per key and window; 0: the default (16 MiB); negative: never, every accumulator waits for its window to close")
	ckptEvery   = flag.Duration("checkpoint_interval", 10*time.Second, "least time between two checkpoints of a streaming job in the --state_dir store, from which it resumes after a crash (a batch job runs again from the beginning); 0 takes none")
	sdkContain  = flag.String("sdk_containers", "auto", "how environments of Beam's own SDK images (apache/beam_python3.X_sdk, apache/beam_go_sdk) run: auto (in Docker when a Docker daemon answers, else as local SDK worker processes), local (always local processes) or docker")
	sdkPython   = flag.String("sdk_python", "", "Python interpreter of local Python SDK workers (default: python3.X of the image, then python3, on PATH; it must have the image's apache-beam version)")
	venvDir     = flag.String("venv_dir", "", "where virtualenvs for jobs' Python requirements are kept and reused (default: beam-runner/venvs in the user's cache dir)")
	stateDir    = flag.String("state_dir", "", "directory of the durable store (job records survive restarts); default: one per --job_port in the user's cache dir; \"none\": keep nothing")
)

func main() {
	if len(os.Args) > 1 {
		if os.Args[1] == "help" {
			usage()
			os.Exit(0)
		}
		if code, ok := runCommand(os.Args[1], os.Args[2:], os.Stdout); ok {
			os.Exit(code)
		}
	}
	flag.Usage = usage
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "beam-runner: unknown command %q\n", flag.Arg(0))
		usage()
		os.Exit(2)
	}
	logger, err := newLogger(*logLevel, *logKind, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "beam-runner:", err)
		os.Exit(2)
	}
	slog.SetDefault(logger)
	if *workerStart <= 0 {
		fmt.Fprintln(os.Stderr, "beam-runner: --worker_start_timeout must be positive")
		os.Exit(2)
	}
	if err := run(logger); err != nil {
		logger.Error("beam-runner failed", "error", err)
		os.Exit(1)
	}
}

func run(logger *slog.Logger) error {
	stopProfile, err := startProfiling(logger)
	if err != nil {
		return err
	}
	defer stopProfile()
	warnIgnoredFlags(logger)
	limit, err := memoryLimit(*memLimit)
	if err != nil {
		return err
	}
	containers, err := worker.ParseContainerMode(*sdkContain)
	if err != nil {
		return err
	}
	setHeapLimit(limit)
	st, err := openStore(logger)
	if err != nil {
		return err
	}
	if st != nil {
		defer st.Close() // after the server stopped and its jobs ended
	}

	srv, err := server.New(server.Config{
		JobPort:          *jobPort,
		ArtifactRoot:     *artifactDir,
		MaxPreparedBytes: *maxPrepared,
		MaxFinishedJobs:  *maxFinished,
		Logger:           logger,
		Executor: execute.New(execute.Options{WorkerStartTimeout: *workerStart, MaxBundleAttempts: *maxAttempts,
			Store: st, MemoryLimit: limit, BoundPending: *memLimit != "" && *memLimit != "none", CheckpointInterval: *ckptEvery,
			CombineMergeBytes: *mergeBytes,
			Environments:      worker.Config{Containers: containers, Python: *sdkPython, CacheDir: *venvDir, Logger: logger}}),
		IdleShutdown:    max(*idleTimeout, 0),
		WebAddr:         webAddr(),
		WebAllowedHosts: webAllowedHosts(),
		Pprof:           *pprofOn || *pprofAddr != "",
		Store:           st,
	})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	served := make(chan struct{})
	defer close(served) // runs before stop(): the watcher must not mistake exit for a signal
	go func() {
		select {
		case <-served:
			return
		case <-ctx.Done():
		}
		select {
		case <-served:
			return
		default:
		}
		logger.Info("signal received; cancelling jobs and shutting down")
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := srv.Stop(sctx); err != nil {
			logger.Warn("shutdown", "error", err)
		}
	}()
	return srv.ListenAndServe()
}

// openStore opens the durable store --state_dir names. With no
// --state_dir the store is per job port, so a server restarted on its port
// finds its jobs and servers on other ports never share a directory; a
// random port (--job_port=0) has no identity to restart as, so it keeps
// nothing, as --state_dir=none does. Default stores of other ports that no
// server has used for store.DefaultRetention are removed.
func openStore(logger *slog.Logger) (*store.Store, error) {
	dir := *stateDir
	switch {
	case dir == "none":
		return nil, nil
	case dir == "" && *jobPort == 0:
		logger.Info("job records are kept in memory only: --job_port=0 and no --state_dir")
		return nil, nil
	case dir == "":
		// The default must not stop a server from starting where there is
		// no usable cache dir (no $HOME, read-only): it then keeps nothing.
		// A default dir in use by another server is still an error: two
		// servers on one port are a mistake worth reporting.
		def, err := store.DefaultDir(*jobPort)
		if err == nil {
			var st *store.Store
			if st, err = store.Open(def, logger); err == nil || errors.Is(err, store.ErrInUse) {
				if err == nil {
					logger.Info("durable store open", "state_dir", def)
					store.PruneDefaultDirs(def, store.DefaultRetention, time.Now(), logger)
				}
				return st, err
			}
		}
		logger.Warn("job records are kept in memory only: the default --state_dir cannot be used", "error", err)
		return nil, nil
	}
	st, err := store.Open(dir, logger)
	if err != nil {
		return nil, err
	}
	logger.Info("durable store open", "state_dir", dir)
	return st, nil
}

func usage() {
	out := flag.CommandLine.Output()
	fmt.Fprintln(out, `usage: beam-runner [flags]            run the job server
       beam-runner jobs                 list jobs
       beam-runner status JOB_ID        a job's state, element counts and user metrics
       beam-runner logs [-f] JOB_ID     a job's messages (-f: follow until it ends)
       beam-runner cancel JOB_ID        cancel a job
       beam-runner drain JOB_ID         drain a streaming job
Commands take --endpoint=host:port (default localhost:8073) and --json.

Server flags:`)
	flag.PrintDefaults()
}

// webAddr is where the web UI listens, or "" when it is off.
func webAddr() string {
	if !*serveHTTP {
		return ""
	}
	return net.JoinHostPort("localhost", strconv.Itoa(*webPort))
}

// webAllowedHosts is --web_allowed_hosts as a list.
func webAllowedHosts() []string {
	var out []string
	for _, h := range strings.Split(*webHosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			out = append(out, h)
		}
	}
	return out
}

func warnIgnoredFlags(logger *slog.Logger) {
	if *jmOverride != "" {
		logger.Warn("--jm_override ignored: beam-runner always serves its own job service")
	}
}

// startProfiling starts the CPU profile and pprof server asked for by flags
// and returns a func that finishes the profile.
func startProfiling(logger *slog.Logger) (func(), error) {
	if *pprofAddr != "" {
		go func() {
			logger.Info("serving pprof", "addr", *pprofAddr)
			if err := http.ListenAndServe(*pprofAddr, nil); err != nil {
				logger.Error("pprof server", "error", err)
			}
		}()
	}
	if *cpuProfile == "" {
		return func() {}, nil
	}
	f, err := os.Create(*cpuProfile)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
