package server

import (
	"context"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/jobs"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// blockingExec runs every job until it is cancelled.
type blockingExec struct{ stopped chan string }

func (blockingExec) Validate(*pipepb.Pipeline) error { return nil }
func (b blockingExec) Execute(ctx context.Context, j *jobs.Job) error {
	j.Running()
	<-ctx.Done()
	b.stopped <- j.ID
	return ctx.Err()
}

func start(t *testing.T, cfg Config) (*Server, chan error) {
	t.Helper()
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg.ArtifactRoot = t.TempDir()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- s.Serve(lis) }()
	for s.Endpoint() == "" {
		time.Sleep(time.Millisecond)
	}
	return s, errc
}

func client(t *testing.T, s *Server) jobpb.JobServiceClient {
	cc, err := grpc.NewClient(s.Endpoint(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return jobpb.NewJobServiceClient(cc)
}

func TestStopCancelsRunningJobs(t *testing.T) {
	exec := blockingExec{stopped: make(chan string, 1)}
	s, errc := start(t, Config{Executor: exec})
	cli := client(t, s)
	ctx := context.Background()
	prep, err := cli.Prepare(ctx, &jobpb.PrepareJobRequest{Pipeline: &pipepb.Pipeline{}})
	if err != nil {
		t.Fatal(err)
	}
	if prep.GetArtifactStagingEndpoint().GetUrl() != s.Endpoint() {
		t.Errorf("staging endpoint %q, want %q", prep.GetArtifactStagingEndpoint().GetUrl(), s.Endpoint())
	}
	run, err := cli.Run(ctx, &jobpb.RunJobRequest{PreparationId: prep.GetPreparationId()})
	if err != nil {
		t.Fatal(err)
	}
	stopCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := s.Stop(stopCtx); err != nil {
		t.Fatal(err)
	}
	if got := <-exec.stopped; got != run.GetJobId() {
		t.Errorf("stopped %q, want %q", got, run.GetJobId())
	}
	if err := <-errc; err != nil {
		t.Errorf("Serve = %v", err)
	}
}

func TestIdleShutdown(t *testing.T) {
	_, errc := start(t, Config{Executor: blockingExec{}, IdleShutdown: 50 * time.Millisecond})
	select {
	case err := <-errc:
		if err != nil {
			t.Errorf("Serve = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("server did not shut down when idle")
	}
}

func TestNoIdleShutdownWhileBusy(t *testing.T) {
	exec := blockingExec{stopped: make(chan string, 1)}
	s, errc := start(t, Config{Executor: exec, IdleShutdown: 200 * time.Millisecond})
	cli := client(t, s)
	prep, err := cli.Prepare(context.Background(), &jobpb.PrepareJobRequest{Pipeline: &pipepb.Pipeline{}})
	if err != nil {
		t.Fatal(err)
	}
	cli.Run(context.Background(), &jobpb.RunJobRequest{PreparationId: prep.GetPreparationId()})
	select {
	case err := <-errc:
		t.Fatalf("server shut down with a running job: %v", err)
	case <-time.After(500 * time.Millisecond):
	}
	s.Stop(context.Background())
	<-exec.stopped
}

func TestNewRequiresExecutor(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Error("New without an executor succeeded")
	}
}
