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
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/beam-runner/beam-runner/cmd/beam-runner/serverflags"
	"github.com/beam-runner/beam-runner/runner/engine"
	"github.com/beam-runner/beam-runner/runner/execute"
	"github.com/beam-runner/beam-runner/runner/server"
	"github.com/beam-runner/beam-runner/runner/spec"
	"github.com/beam-runner/beam-runner/runner/store"
	"github.com/beam-runner/beam-runner/runner/workers"
	"github.com/beam-runner/beam-runner/worker"
)

// fl are the server's flags, on the command line's flag set.
var fl = serverflags.Register(flag.CommandLine)

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
	logger, err := newLogger(fl.LogLevel, fl.LogKind, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "beam-runner:", err)
		os.Exit(2)
	}
	slog.SetDefault(logger)
	if fl.WorkerStartTimeout <= 0 {
		fmt.Fprintln(os.Stderr, "beam-runner: --worker_start_timeout must be positive")
		os.Exit(2)
	}
	fnListen, err := fl.FnAPIListen()
	if err != nil {
		fmt.Fprintln(os.Stderr, "beam-runner:", err)
		os.Exit(2)
	}
	pools, err := fl.Pools()
	if err != nil {
		fmt.Fprintln(os.Stderr, "beam-runner: --worker_pools:", err)
		os.Exit(2)
	}
	if err := fl.Scaling.Check(); err != nil {
		fmt.Fprintln(os.Stderr, "beam-runner: --"+err.Error())
		os.Exit(2)
	}
	if err := run(logger, workers.Options{StartTimeout: fl.WorkerStartTimeout, FnAPI: fnListen, Pools: pools, PoolRefresh: fl.PoolRefresh()}); err != nil {
		logger.Error("beam-runner failed", "error", err)
		os.Exit(1)
	}
}

// environments reads how SDK workers start from the --sdk_* flags.
func environments(logger *slog.Logger) (worker.Config, error) {
	containers, err := worker.ParseContainerMode(fl.SDKContainers)
	if err != nil {
		return worker.Config{}, err
	}
	return worker.Config{Containers: containers,
		Python: worker.PythonConfig{Interpreter: fl.SDKPython, CacheDir: fl.VenvDir},
		Java:   worker.JavaConfig{Runtime: fl.SDKJava, Classpath: fl.SDKJavaClasspath}, Logger: logger}, nil
}

// executorOptions are the executor's options from the flags; spill is
// the store jobs spill to, limit the memory limit in bytes.
func executorOptions(wopts workers.Options, spill *store.Store, limit int64) execute.Options {
	wopts.Scaling = fl.Scaling
	return execute.Options{MaxBundleAttempts: fl.MaxBundleAttempts,
		Memory:             spec.Memory{Store: spill, Limit: limit, BoundPending: fl.MemoryLimit != "" && fl.MemoryLimit != "none"},
		CheckpointInterval: fl.CheckpointInterval,
		CombineTreeBytes:   fl.CombineTreeBytes,
		RateWindow:         fl.RateWindow,
		FlowControl:        flowControl(),
		Workers:            wopts}
}

// flowControl reads the --flow_control flags; nil turns it off.
func flowControl() *engine.FlowControl {
	if !fl.FlowControl {
		return nil
	}
	return &engine.FlowControl{MinBytes: fl.FlowControlMinBytes, MaxBytes: fl.FlowControlMaxBytes}
}

// run serves jobs until the server stops; wopts is how workers start,
// but for their environments, which run reads from the flags.
func run(logger *slog.Logger, wopts workers.Options) error {
	stopProfile, err := startProfiling(logger)
	if err != nil {
		return err
	}
	defer stopProfile()
	warnIgnoredFlags(logger)
	limit, err := memoryLimit(fl.MemoryLimit)
	if err != nil {
		return err
	}
	if wopts.Environments, err = environments(logger); err != nil {
		return err
	}
	setHeapLimit(limit)
	tuneHeap(limit)
	records, spill, err := openStores(logger)
	if err != nil {
		return err
	}
	if spill != nil {
		defer spill.Close() // after the server stopped and its jobs ended (records too)
	}

	srv, err := server.New(server.Config{
		JobPort:          fl.JobPort,
		Host:             fl.JobHost,
		ArtifactRoot:     artifactRoot(),
		MaxPreparedBytes: fl.MaxPreparedBytes,
		MaxFinishedJobs:  fl.MaxFinishedJobs,
		Logger:           logger,
		Executor:         execute.New(executorOptions(wopts, spill, limit)),
		IdleShutdown:     max(fl.IdleShutdown, 0),
		WebAddr:          webAddr(),
		WebAllowedHosts:  webAllowedHosts(),
		Pprof:            fl.Pprof || fl.PprofAddr != "",
		Store:            records,
	})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	served := make(chan struct{})
	defer close(served) // runs before stop(): the watcher must not mistake exit for a signal
	go stopOnSignal(ctx, served, srv, logger)
	return srv.ListenAndServe()
}

// stopOnSignal stops the server, cancelling its jobs, once ctx is done
// by a signal, unless it stopped serving first (served is closed).
func stopOnSignal(ctx context.Context, served <-chan struct{}, srv *server.Server, logger *slog.Logger) {
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
}

// openStores opens the stores the flags ask for: records keeps job
// records and checkpoints across restarts, spill takes what running jobs
// spill (it may be records). Only an explicit --state_dir is durable: a
// server started the way SDKs start Prism (a fresh --job_port each run)
// leaves nothing on disk once it exits, and one a user runs for its
// history, or for its streaming jobs to resume after a crash, names where
// to keep them. Without --state_dir jobs spill to a temporary store,
// removed at exit (and, if the server is killed, by the next server);
// --state_dir=none keeps and spills nothing.
func openStores(logger *slog.Logger) (records, spill *store.Store, err error) {
	switch dir := fl.StateDir; dir {
	case "none":
		logger.Info("job records are kept in memory only and jobs do not spill: --state_dir=none")
		return nil, nil, nil
	case "":
		// Stores of older servers, which kept one per port by default.
		go store.PruneOldDefaultDirs(store.DefaultRetention, time.Now(), logger)
		tmp, err := store.OpenTemp(logger)
		if err != nil {
			// A server must start where the temp dir is unusable: its
			// jobs then hold everything in memory.
			logger.Warn("jobs will not spill: no temporary store", "error", err)
			return nil, nil, nil
		}
		logger.Info("job records are kept in memory only; --state_dir keeps them (and streaming checkpoints) across restarts", "spill_dir", tmp.Dir())
		return nil, tmp, nil
	default:
		st, err := store.Open(dir, logger)
		if err != nil {
			return nil, nil, err
		}
		logger.Info("durable store open", "state_dir", dir)
		return st, st, nil
	}
}

// artifactRoot is where staged artifacts go: --artifact_root, or with a
// durable --state_dir a directory in it, so that a job resumed after a
// restart finds its workers' artifacts there (a temporary root is the
// next server's to remove); "" lets the service make a temporary one.
func artifactRoot() string {
	if fl.ArtifactRoot != "" || fl.StateDir == "" || fl.StateDir == "none" {
		return fl.ArtifactRoot
	}
	return filepath.Join(fl.StateDir, "artifacts")
}

func usage() {
	out := flag.CommandLine.Output()
	fmt.Fprintln(out, `usage: beam-runner [flags]            run the job server
       beam-runner jobs                 list jobs
       beam-runner status JOB_ID        a job's state, element counts and user metrics
       beam-runner logs [-f] JOB_ID     a job's messages (-f: follow until it ends)
       beam-runner cancel JOB_ID        cancel a job (--savepoint: stop it at a savepoint)
       beam-runner drain JOB_ID         drain a streaming job (--savepoint: after writing one)
       beam-runner savepoint JOB_ID [DIR]  write a savepoint of a running job
Commands take --endpoint=host:port (default localhost:8073) and --json.

Server flags:`)
	flag.PrintDefaults()
}

// webAddr is where the web UI listens, or "" when it is off.
func webAddr() string {
	if !fl.ServeHTTP {
		return ""
	}
	return net.JoinHostPort("localhost", strconv.Itoa(fl.WebPort))
}

// webAllowedHosts is --web_allowed_hosts as a list.
func webAllowedHosts() []string {
	var out []string
	for _, h := range strings.Split(fl.WebAllowedHosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			out = append(out, h)
		}
	}
	return out
}

func warnIgnoredFlags(logger *slog.Logger) {
	if fl.JMOverride != "" {
		logger.Warn("--jm_override ignored: beam-runner always serves its own job service")
	}
	for _, d := range fl.Deprecated {
		logger.Warn(d)
	}
}

// startProfiling starts the CPU profile and pprof server asked for by flags
// and returns a func that finishes the profile.
func startProfiling(logger *slog.Logger) (func(), error) {
	if fl.PprofAddr != "" {
		go func() {
			logger.Info("serving pprof", "addr", fl.PprofAddr)
			if err := http.ListenAndServe(fl.PprofAddr, nil); err != nil {
				logger.Error("pprof server", "error", err)
			}
		}()
	}
	if fl.CPUProfile == "" {
		return func() {}, nil
	}
	f, err := os.Create(fl.CPUProfile)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
