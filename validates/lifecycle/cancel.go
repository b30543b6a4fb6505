package lifecycle

import (
	"context"
	"fmt"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"

	"github.com/beam-runner/beam-runner/testsupport/testwait"
)

const (
	cancelLimit = 10 * time.Second // Cancel to CANCELLED
	idleWindow  = 3 * time.Second  // CPU sample after the cancel
	idleMaxCPU  = 0.05             // of one core
)

// checkCancel: a job stuck in a long DoFn is cancelled promptly, the
// worker is told to stop, and the server goes back to idle.
func checkCancel(ctx context.Context, s *Session) error {
	p, err := s.loopback(ctx, slow(5))
	if err != nil {
		return err
	}
	mark := s.pool.startedCount()
	id, err := s.submit(ctx, "lifecycle-cancel", p)
	if err != nil {
		return err
	}
	if err := s.awaitRunningDoFn(ctx, id); err != nil {
		s.client.Cancel(ctx, &jobpb.CancelJobRequest{JobId: id}) // do not leave it running
		return err
	}
	start := time.Now()
	if _, err := s.client.Cancel(ctx, &jobpb.CancelJobRequest{JobId: id}); err != nil {
		return fmt.Errorf("Cancel: %w", err)
	}
	if err := s.awaitState(ctx, id, jobpb.JobState_CANCELLED, cancelLimit); err != nil {
		return err
	}
	took := time.Since(start)
	if err := s.pool.awaitStopped(mark, cancelLimit); err != nil {
		return err
	}
	if err := s.serverIdle(); err != nil {
		return fmt.Errorf("after CANCELLED in %v: %w", took.Round(time.Millisecond), err)
	}
	return nil
}

// awaitRunningDoFn waits until the job is RUNNING and slowFn has started.
func (s *Session) awaitRunningDoFn(ctx context.Context, id string) error {
	if err := s.awaitState(ctx, id, jobpb.JobState_RUNNING, time.Minute); err != nil {
		return err
	}
	err := testwait.For(ctx, time.Minute, func() (bool, error) { return slowActive.Load() > 0, nil })
	if err != nil {
		return fmt.Errorf("the slow DoFn did not start after RUNNING: %w", err)
	}
	return nil
}

// serverIdle samples the server's CPU time over idleWindow.
func (s *Session) serverIdle() error {
	if s.ServerPID == 0 {
		return fmt.Errorf("no server pid to sample")
	}
	use, err := cpuShare(s.ServerPID, idleWindow)
	if err != nil {
		return err
	}
	if use >= idleMaxCPU {
		return fmt.Errorf("the server used %.1f%% of a core over %v; want < %.0f%% (still working for the cancelled job?)",
			100*use, idleWindow, 100*idleMaxCPU)
	}
	return nil
}
