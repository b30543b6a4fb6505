// Package beamrunner registers beam-runner with the Beam Go SDK:
//
//	import _ "github.com/beam-runner/beam-runner/beamrunner"
//
// then run the pipeline with --runner=beam-runner (or BeamRunner). Without
// --endpoint, an in-process job server is started for the pipeline and the
// SDK harness runs in this process (LOOPBACK), like the Go direct runner.
// With --endpoint, the pipeline is submitted to that job server.
//
// The in-process server logs at WARN unless --beam_runner_log_level says
// otherwise, and on a terminal it shows one progress line per stage
// (--beam_runner_progress=false turns that off).
package beamrunner

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal"
	"github.com/beam-runner/beam-runner/runner/execute"
	"github.com/beam-runner/beam-runner/runner/server"
	"golang.org/x/term"
)

var (
	logLevel     = flag.String("beam_runner_log_level", "warn", "log level of the in-process beam-runner server: debug, info, warn or error")
	showProgress = flag.Bool("beam_runner_progress", true, "show one progress line per stage on a terminal while the pipeline runs in process")
)

func init() {
	beam.RegisterRunner("beam-runner", Execute)
	beam.RegisterRunner("BeamRunner", Execute)
}

// Execute runs p on beam-runner; see the package comment.
func Execute(ctx context.Context, p *beam.Pipeline) (beam.PipelineResult, error) {
	submit := universal.Execute
	if isEmpty(p) {
		submit = executeEmpty
	}
	if *jobopts.Endpoint != "" {
		return submit(ctx, p)
	}
	logger, err := serverLogger(*logLevel, os.Stderr)
	if err != nil {
		return nil, err
	}
	srv, endpoint, err := startInProcess(logger)
	if err != nil {
		return nil, err
	}
	defer stopInProcess(srv, logger)
	if *showProgress && term.IsTerminal(int(os.Stderr.Fd())) {
		defer startProgress(srv.Service(), os.Stderr, 500*time.Millisecond).Stop()
	}
	// The universal runner reads these flags; restore them so a later
	// pipeline in this process starts its own server again.
	defer setFlag(jobopts.Endpoint, endpoint)()
	if *jobopts.EnvironmentType == "" {
		defer setFlag(jobopts.EnvironmentType, "LOOPBACK")()
	}
	return submit(ctx, p)
}

// serverLogger is the in-process server's logger: text on w from level up.
func serverLogger(level string, w io.Writer) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("beam-runner: --beam_runner_log_level %q: want debug, info, warn or error", level)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: lvl})), nil
}

// startInProcess starts a job server that lives only as long as this
// pipeline's Execute. It keeps no durable store: its jobs' workers run in
// this process (LOOPBACK), so nothing of them could outlive it, and
// pipelines run in parallel in one process must not contend for a state
// directory.
func startInProcess(logger *slog.Logger) (*server.Server, string, error) {
	srv, err := server.New(server.Config{Executor: execute.New(execute.Options{Logger: logger}), Logger: logger})
	if err != nil {
		return nil, "", err
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", fmt.Errorf("beam-runner: starting in-process job server: %w", err)
	}
	go func() {
		if err := srv.Serve(lis); err != nil {
			logger.Error("beam-runner: in-process job server", "error", err)
		}
	}()
	// Dial the address actually bound, not "localhost", which may resolve
	// to ::1 first.
	return srv, lis.Addr().String(), nil
}

func stopInProcess(srv *server.Server, logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Stop(ctx); err != nil {
		logger.Warn("beam-runner: stopping in-process job server", "error", err)
	}
}

// setFlag sets *f to v and returns a func restoring the old value.
func setFlag(f *string, v string) func() {
	old := *f
	*f = v
	return func() { *f = old }
}
