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
	"github.com/beam-runner/beam-runner/testsupport/testwait"
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
	testwait.Until(t, 10*time.Second, "Serve to publish its endpoint", func() bool { return s.Endpoint() != "" })
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
	awaitShutdown(t, errc, "when idle")
}

// awaitShutdown requires Serve to return nil within a bound.
func awaitShutdown(t *testing.T, errc <-chan error, when string) {
	t.Helper()
	select {
	case err := <-errc:
		if err != nil {
			t.Errorf("Serve = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("server did not shut down "+when, "\n"+testwait.Goroutines())
	}
}

func TestNoIdleShutdownWhileBusy(t *testing.T) {
	exec := blockingExec{stopped: make(chan string, 1)}
	s, errc := start(t, Config{Executor: exec, IdleShutdown: time.Second})
	cli := client(t, s)
	ctx := context.Background()
	prep, err := cli.Prepare(ctx, &jobpb.PrepareJobRequest{Pipeline: &pipepb.Pipeline{}})
	if err != nil {
		t.Fatal(err)
	}
	run, err := cli.Run(ctx, &jobpb.RunJobRequest{PreparationId: prep.GetPreparationId()})
	if err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 10*time.Second, "the job to run", func() bool {
		st, err := cli.GetState(ctx, &jobpb.GetJobStateRequest{JobId: run.GetJobId()})
		return err == nil && st.GetState() == jobpb.JobState_RUNNING
	})
	// The idle watcher shuts down once idleFor reaches the timeout; a
	// running job keeps that at 0 however late the watcher looks.
	if d := idleFor(s.svc, time.Now().Add(time.Hour)); d != 0 {
		t.Fatalf("idle for %v an hour from now with a job running; want 0", d)
	}
	select {
	case err := <-errc:
		t.Fatalf("server shut down with a running job: %v", err)
	default:
	}
	// Once the job has ended the server is idle, and the watcher, which
	// was running all along, shuts it down.
	if _, err := cli.Cancel(ctx, &jobpb.CancelJobRequest{JobId: run.GetJobId()}); err != nil {
		t.Fatal(err)
	}
	<-exec.stopped
	awaitShutdown(t, errc, "once its job had ended")
}

func TestNewRequiresExecutor(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Error("New without an executor succeeded")
	}
}
