// Package beamrunner registers beam-runner with the Beam Go SDK:
//
//	import _ "github.com/beam-runner/beam-runner/beamrunner"
//
// then run the pipeline with --runner=beam-runner (or BeamRunner). Without
// --endpoint, an in-process job server is started for the pipeline and the
// SDK harness runs in this process (LOOPBACK), like the Go direct runner.
// With --endpoint, the pipeline is submitted to that job server.
package beamrunner

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal"
	"github.com/beam-runner/beam-runner/runner/execute"
	"github.com/beam-runner/beam-runner/runner/server"
)

func init() {
	beam.RegisterRunner("beam-runner", Execute)
	beam.RegisterRunner("BeamRunner", Execute)
}

// Execute runs p on beam-runner; see the package comment.
func Execute(ctx context.Context, p *beam.Pipeline) (beam.PipelineResult, error) {
	if *jobopts.Endpoint != "" {
		return universal.Execute(ctx, p)
	}
	srv, endpoint, err := startInProcess()
	if err != nil {
		return nil, err
	}
	defer stopInProcess(srv)
	// The universal runner reads these flags; restore them so a later
	// pipeline in this process starts its own server again.
	defer setFlag(jobopts.Endpoint, endpoint)()
	if *jobopts.EnvironmentType == "" {
		defer setFlag(jobopts.EnvironmentType, "LOOPBACK")()
	}
	return universal.Execute(ctx, p)
}

// startInProcess starts a job server that lives only as long as this
// pipeline's Execute. It keeps no durable store: its jobs' workers run in
// this process (LOOPBACK), so nothing of them could outlive it, and
// pipelines run in parallel in one process must not contend for a state
// directory.
func startInProcess() (*server.Server, string, error) {
	srv, err := server.New(server.Config{Executor: execute.New(execute.Options{}), Logger: slog.Default()})
	if err != nil {
		return nil, "", err
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", fmt.Errorf("beam-runner: starting in-process job server: %w", err)
	}
	go func() {
		if err := srv.Serve(lis); err != nil {
			slog.Error("beam-runner: in-process job server", "error", err)
		}
	}()
	// Dial the address actually bound, not "localhost", which may resolve
	// to ::1 first.
	return srv, lis.Addr().String(), nil
}

func stopInProcess(srv *server.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Stop(ctx); err != nil {
		slog.Warn("beam-runner: stopping in-process job server", "error", err)
	}
}

// setFlag sets *f to v and returns a func restoring the old value.
func setFlag(f *string, v string) func() {
	old := *f
	*f = v
	return func() { *f = old }
}
