// Command beam-runner is the beam-runner job server. It accepts Prism's
// flags so it can stand in for Prism (e.g. Python's --prism_location).
package main

import (
	"context"
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
	"syscall"
	"time"

	"github.com/beam-runner/beam-runner/runner/execute"
	"github.com/beam-runner/beam-runner/runner/server"
)

var (
	jobPort     = flag.Int("job_port", 8073, "job management service port")
	logLevel    = flag.String("log_level", "info", "minimum log level: debug, info, warn or error")
	logKind     = flag.String("log_kind", "dev", "log format: dev (human readable), json or text")
	serveHTTP   = flag.Bool("serve_http", true, "serve the web UI and /metrics on --web_port")
	webPort     = flag.Int("web_port", 8074, "port of the web UI, /metrics and (with --pprof) /debug/pprof; 0 picks a free one")
	pprofOn     = flag.Bool("pprof", false, "serve /debug/pprof on --web_port")
	jmOverride  = flag.String("jm_override", "", "accepted for Prism compatibility; not supported")
	idleTimeout = flag.Duration("idle_shutdown_timeout", 0, "exit after no job has run for this long; 0 or negative: never")
	cpuProfile  = flag.String("cpuprofile", "", "write a CPU profile to this file")
	pprofAddr   = flag.String("pprof_addr", "", "also serve /debug/pprof on this address of its own (older form of --pprof)")
	artifactDir = flag.String("artifact_root", "", "directory for staged artifacts (default: $TMPDIR/beam-runner-artifacts)")
	workerStart = flag.Duration("worker_start_timeout", 2*time.Minute, "how long an environment's SDK harness may take to connect before its job fails")
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

	srv, err := server.New(server.Config{
		JobPort:      *jobPort,
		ArtifactRoot: *artifactDir,
		Logger:       logger,
		Executor:     execute.New(execute.Options{WorkerStartTimeout: *workerStart}),
		IdleShutdown: max(*idleTimeout, 0),
		WebAddr:      webAddr(),
		Pprof:        *pprofOn || *pprofAddr != "",
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
