// Package jobtest runs a real job server (with the real executor and web
// endpoint) and submits Go SDK pipelines to it on a LOOPBACK worker pool in
// the test process, for tests of the operator tools.
package jobtest

import (
	"context"
	"errors"
	"fmt"
	"github.com/beam-runner/beam-runner/testsupport/gopipe"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal/extworker"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal/runnerlib"
	"github.com/beam-runner/beam-runner/runner/execute"
	"github.com/beam-runner/beam-runner/runner/jobs"
	"github.com/beam-runner/beam-runner/runner/server"
	"github.com/beam-runner/beam-runner/runner/store"
	"github.com/beam-runner/beam-runner/testsupport/testwait"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// Env is a running job server with a worker pool.
type Env struct {
	Endpoint string // the Job API, host:port
	WebURL   string // the web endpoint, http://host:port
	Client   jobpb.JobServiceClient
	pool     *extworker.Loopback
	work     string
}

// Start runs a server on free ports for the test's lifetime.
func Start(t testing.TB) *Env {
	t.Helper()
	return StartWith(t, nil)
}

// Options are what a test may change of the server Start runs; zero
// fields keep Start's.
type Options struct {
	Logger      *slog.Logger
	Parallelism int
	RateWindow  time.Duration
	// Scaling is the server's autoscaling flags.
	Scaling jobs.Scaling
	// StateDir, if set, is the server's --state_dir: a durable store
	// there keeps its job records and checkpoints (every
	// CheckpointInterval, 1 s if zero) and takes its spills.
	StateDir           string
	CheckpointInterval time.Duration
}

// StartWith is Start with the server's options changed by o.
func StartWith(t testing.TB, o *Options) *Env {
	t.Helper()
	beam.Init()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("JOBTEST_LOG") != "" {
		logger = slog.Default()
	}
	opts := execute.Options{Logger: logger, Parallelism: 2}
	if o != nil {
		if o.Logger != nil {
			opts.Logger, logger = o.Logger, o.Logger
		}
		opts.Parallelism = max(o.Parallelism, opts.Parallelism)
		opts.RateWindow, opts.Workers.Scaling = o.RateWindow, o.Scaling
	}
	st := openStateDir(t, o, &opts)
	addr, srv := Serve(t, server.Config{
		Executor: execute.New(opts),
		Logger:   logger,
		WebAddr:  "127.0.0.1:0",
		Pprof:    true,
		Store:    st,
	})
	web := waitWeb(t, srv)
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	pool, err := extworker.StartLoopback(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Stop(context.Background()) })
	return &Env{Endpoint: addr, WebURL: "http://" + web, Client: jobpb.NewJobServiceClient(conn), pool: pool, work: t.TempDir()}
}

// openStateDir opens o's StateDir, as the binary's --state_dir does, for
// the server's records and opts' spills and checkpoints; nil without
// one. The store closes after the server stops (cleanups run last
// first).
func openStateDir(t testing.TB, o *Options, opts *execute.Options) *store.Store {
	if o == nil || o.StateDir == "" {
		return nil
	}
	st, err := store.Open(o.StateDir, opts.Logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	opts.Memory.Store = st
	opts.CheckpointInterval = o.CheckpointInterval
	if opts.CheckpointInterval == 0 {
		opts.CheckpointInterval = time.Second
	}
	return st
}

// Serve runs a job server of cfg on a free loopback port until the test
// ends, and returns its Job API address.
func Serve(t testing.TB, cfg server.Config) (string, *server.Server) {
	t.Helper()
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		srv.Stop(ctx)
		<-served
	})
	return lis.Addr().String(), srv
}

// waitWeb waits until the server's web endpoint listens.
func waitWeb(t testing.TB, srv *server.Server) string {
	t.Helper()
	testwait.Until(t, 10*time.Second, "the web endpoint to start", func() bool { return srv.WebEndpoint() != "" })
	return srv.WebEndpoint()
}

// Submit builds a pipeline, submits it as the Go SDK's universal runner
// does with LOOPBACK, and returns the job id and the pipeline proto.
func (e *Env) Submit(ctx context.Context, name string, build func(beam.Scope)) (string, *pipepb.Pipeline, error) {
	return e.SubmitWith(ctx, name, nil, build)
}

// SubmitWith is Submit with job options of the runner's own added to
// those the SDK sends (as beam:option:NAME:v1, as Python sends them).
func (e *Env) SubmitWith(ctx context.Context, name string, opts map[string]any, build func(beam.Scope)) (string, *pipepb.Pipeline, error) {
	p, s := beam.NewPipelineWithRoot()
	build(s)
	pipe, err := gopipe.Marshal(ctx, p, graphx.URNEnvExternal, e.pool.EnvironmentConfig(ctx))
	if err != nil {
		return "", nil, err
	}
	// The worker binary is never run with LOOPBACK, but the SDK stages one.
	bin := filepath.Join(e.work, "empty-worker")
	if err := os.WriteFile(bin, nil, 0o644); err != nil {
		return "", nil, err
	}
	if err := runnerlib.UpdateGoEnvironmentWorker(bin, pipe); err != nil {
		return "", nil, err
	}
	prepID, artifacts, token, err := runnerlib.Prepare(ctx, withOptions{e.Client, opts}, pipe, &runnerlib.JobOptions{Name: name, Loopback: true})
	if err != nil {
		return "", nil, err
	}
	retrieval, err := runnerlib.Stage(ctx, prepID, artifacts, bin, token)
	if err != nil {
		return "", nil, err
	}
	id, err := runnerlib.Submit(ctx, e.Client, prepID, retrieval)
	return id, pipe, err
}

// withOptions adds options to the pipeline options a client prepares a
// job with, as Python's and Go's option names are sent: beam:option:NAME:v1.
type withOptions struct {
	jobpb.JobServiceClient
	opts map[string]any
}

func (c withOptions) Prepare(ctx context.Context, req *jobpb.PrepareJobRequest, co ...grpc.CallOption) (*jobpb.PrepareJobResponse, error) {
	if len(c.opts) > 0 {
		req = proto.Clone(req).(*jobpb.PrepareJobRequest)
		if req.PipelineOptions == nil {
			req.PipelineOptions = &structpb.Struct{}
		}
		if req.PipelineOptions.Fields == nil {
			req.PipelineOptions.Fields = map[string]*structpb.Value{}
		}
		for k, v := range c.opts {
			val, err := structpb.NewValue(v)
			if err != nil {
				return nil, fmt.Errorf("job option %s: %w", k, err)
			}
			req.PipelineOptions.Fields["beam:option:"+k+":v1"] = val
		}
	}
	return c.JobServiceClient.Prepare(ctx, req, co...)
}

// AwaitState polls until the job is in want, failing early on another
// terminal state.
func (e *Env) AwaitState(ctx context.Context, jobID string, want jobpb.JobState_Enum, limit time.Duration) error {
	var got jobpb.JobState_Enum
	err := testwait.For(ctx, limit, func() (bool, error) {
		ev, err := e.Client.GetState(ctx, &jobpb.GetJobStateRequest{JobId: jobID})
		if err != nil {
			return false, err
		}
		switch got = ev.GetState(); got {
		case want:
			return true, nil
		case jobpb.JobState_DONE, jobpb.JobState_FAILED, jobpb.JobState_CANCELLED, jobpb.JobState_DRAINED:
			return false, fmt.Errorf("job %s reached %v while waiting for %v", jobID, got, want)
		}
		return false, nil
	})
	if errors.Is(err, testwait.ErrExpired) {
		return fmt.Errorf("job %s still %v, want %v: %w", jobID, got, want, err)
	}
	return err
}
