// Command beam-runner is the beam-runner job server. It accepts Prism's
// flags so it can stand in for Prism (e.g. Python's --prism_location).
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	_ "net/http/pprof" // served only when --pprof_addr is set
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/beam-runner/beam-runner/runner/execute"
	"github.com/beam-runner/beam-runner/runner/jobs"
	"github.com/beam-runner/beam-runner/runner/server"
)

var (
	jobPort     = flag.Int("job_port", 8073, "job management service port")
	logLevel    = flag.String("log_level", "info", "minimum log level: debug, info, warn or error")
	logKind     = flag.String("log_kind", "dev", "log format: dev (human readable), json or text")
	serveHTTP   = flag.Bool("serve_http", true, "accepted for Prism compatibility; there is no web UI yet")
	webPort     = flag.Int("web_port", 8074, "accepted for Prism compatibility; there is no web UI yet")
	jmOverride  = flag.String("jm_override", "", "accepted for Prism compatibility; not supported")
	idleTimeout = flag.Duration("idle_shutdown_timeout", 0, "exit after no job has run for this long; 0 or negative: never")
	cpuProfile  = flag.String("cpuprofile", "", "write a CPU profile to this file")
	pprofAddr   = flag.String("pprof_addr", "", "serve net/http/pprof on this address")
	artifactDir = flag.String("artifact_root", "", "directory for staged artifacts (default: a fresh private directory in $TMPDIR, removed at exit; roots of dead servers are removed)")
	maxPrepared = flag.Int64("max_prepared_bytes", jobs.DefaultMaxPreparedBytes, "cap on the pipeline bytes of prepared jobs not yet run; Prepare past it gets RESOURCE_EXHAUSTED (negative: no cap)")
	workerStart = flag.Duration("worker_start_timeout", 2*time.Minute, "how long an environment's SDK harness may take to connect before its job fails")
	maxAttempts = flag.Int("max_bundle_attempts", 4, "how many times a bundle whose worker died or whose user code failed may run before its job fails")
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "drain" {
		os.Exit(drainCommand(os.Args[2:], os.Stdout))
	}
	flag.Parse()
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

	srv, err := server.New(server.Config{
		JobPort:          *jobPort,
		ArtifactRoot:     *artifactDir,
		MaxPreparedBytes: *maxPrepared,
		Logger:           logger,
		Executor:         execute.New(execute.Options{WorkerStartTimeout: *workerStart, MaxBundleAttempts: *maxAttempts}),
		IdleShutdown:     max(*idleTimeout, 0),
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

func warnIgnoredFlags(logger *slog.Logger) {
	if *serveHTTP {
		logger.Info("--serve_http ignored: beam-runner has no web UI yet", "web_port", *webPort)
	}
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
