package jobs

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// stall is an errorfs injector that, once armed, holds every sync of the
// write-ahead log until released: a disk that takes its time, without a
// clock in the test. stalled is closed when the first sync is held.
type stall struct {
	mu       sync.Mutex
	armed    bool
	stalled  chan struct{}
	released chan struct{}
	once     sync.Once
	free     sync.Once
}

// release lets the held syncs, and all later ones, go on.
func (s *stall) release() { s.free.Do(func() { close(s.released) }) }

func newStall() *stall {
	return &stall{stalled: make(chan struct{}), released: make(chan struct{})}
}

func (s *stall) arm() { s.mu.Lock(); s.armed = true; s.mu.Unlock() }

func (s *stall) MaybeError(op errorfs.Op) error {
	switch op.Kind {
	case errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo:
	default:
		return nil
	}
	s.mu.Lock()
	armed := s.armed
	s.mu.Unlock()
	if !armed || !strings.HasSuffix(op.Path, ".log") {
		return nil
	}
	s.once.Do(func() { close(s.stalled) })
	<-s.released
	return nil
}

func (s *stall) String() string { return "stall" }

// within fails the test, with every goroutine's stack, unless ch is
// closed or yields within a deadline.
func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(20 * time.Second):
		buf := make([]byte, 1<<20)
		t.Fatalf("%s: not within the deadline; goroutines:\n%s", what, buf[:runtime.Stack(buf, true)])
		panic("unreachable")
	}
}

// TestStalledCheckpointHoldsNothing: while a checkpoint's fsync is stuck
// on the disk, the executor's job messages and metrics (the driver sends
// them after every commit) return, and the job's state, metrics and
// messages answer; once the disk goes on, the checkpoint is saved and the
// job ends. A checkpoint once held the record's lock across its fsyncs,
// so the driver waited behind it.
func TestStalledCheckpointHoldsNothing(t *testing.T) {
	stall := newStall()
	st := openOn(t, errorfs.Wrap(vfs.NewMem(), stall))
	defer st.Close()
	metrics := []*pipepb.MonitoringInfo{{Urn: "beam:metric:user:sum_int64:v1", Payload: []byte{7}}}
	answered, saved, written := make(chan struct{}), make(chan error, 1), make(chan error, 1)
	e, stop := serveDurable(t, &fakeExec{execute: func(ctx context.Context, j *Job) error {
		j.Running()
		stall.arm()
		go func() { saved <- j.Checkpoint([]byte("stuck")) }()
		<-stall.stalled
		j.Message(jobpb.JobMessage_JOB_MESSAGE_BASIC, "said while the disk is stuck")
		j.SetMetrics(metrics)
		close(answered)
		err := <-saved
		written <- err
		return err
	}}, st, t.TempDir())
	defer stop()
	defer stall.release() // first: a failed test must not leave the store stuck
	id := e.submit(t, pipeline())
	within(t, answered, "the job's message and metrics while its checkpoint's fsync is stuck")
	select {
	case <-stall.released:
		t.Fatal("released early: the test shows nothing")
	default:
	}
	if s, err := e.cli.GetState(ctxT(t), &jobpb.GetJobStateRequest{JobId: id}); err != nil || s.GetState() != jobpb.JobState_RUNNING {
		t.Errorf("GetState while the checkpoint is stuck: %v, %v; want RUNNING", s.GetState(), err)
	}
	m, err := e.cli.GetJobMetrics(ctxT(t), &jobpb.GetJobMetricsRequest{JobId: id})
	if err != nil || len(m.GetMetrics().GetAttempted()) != 1 {
		t.Errorf("GetJobMetrics while the checkpoint is stuck: %v, %v; want the metric set", m, err)
	}
	stall.release()
	if err := within(t, written, "the checkpoint after the disk went on"); err != nil {
		t.Errorf("checkpoint: %v", err)
	}
	e.waitState(t, id, jobpb.JobState_DONE)
	if evs := strings.Join(e.events(t, id), " | "); !strings.Contains(evs, "said while the disk is stuck") {
		t.Errorf("events %q: want the message sent while the disk was stuck", evs)
	}
}
