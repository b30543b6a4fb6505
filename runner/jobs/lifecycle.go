package jobs

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
)

// start registers the job and runs it in its own goroutine. The caller has
// already counted it in mu.running (takePreparation).
func (s *Service) start(j *Job) {
	ctx, cancel := context.WithCancel(s.baseCtx)
	r := newRecord(j, cancel)
	if s.opts.Store != nil {
		r.journal = &journal{st: s.opts.Store, id: j.ID, log: s.log}
		r.journal.begin(j, r.mu.log)
	}
	r.setState(jobpb.JobState_STARTING)
	s.mu.Lock()
	s.mu.jobs[j.ID] = r
	s.mu.Unlock()
	s.wg.Add(1)
	go s.runJob(ctx, r)
}

func (s *Service) runJob(ctx context.Context, r *record) {
	defer s.wg.Done()
	s.log.Info("job starting", "job_id", r.job.ID)
	err := s.execute(ctx, r.job)
	cancelled := ctx.Err() != nil
	r.cancel()
	// Files go before the terminal state is published, so a client that
	// sees the job end can rely on its artifacts being gone.
	s.cleanup(r.job.ID, r.job.ArtifactDir)
	final := r.finish(err, cancelled)
	s.log.Info("job ended", "job_id", r.job.ID, "state", final.String(), "error", err)
	s.mu.Lock()
	s.mu.running--
	s.updateIdleLocked()
	s.mu.Unlock()
	s.ended(r.job.ID)
}

// execute calls the executor, turning a panic into a job failure so one
// job's engine bug cannot take down the server or other jobs.
func (s *Service) execute(ctx context.Context, j *Job) (err error) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("executor panicked", "job_id", j.ID, "panic", p, "stack", string(debug.Stack()))
			err = fmt.Errorf("internal error in runner: %v", p)
		}
	}()
	return s.opts.Executor.Execute(ctx, j)
}

func (s *Service) cleanup(token, dir string) {
	s.opts.Staging.Forget(token)
	if err := os.RemoveAll(dir); err != nil {
		s.log.Warn("removing artifact directory", "dir", dir, "error", err)
	}
}

// discard drops a taken preparation whose Run failed before the job started.
func (s *Service) discard(p *preparation) {
	s.cleanup(p.id, p.dir)
	s.mu.Lock()
	s.mu.running--
	s.updateIdleLocked()
	s.mu.Unlock()
}

// janitor periodically expires preparations that were never run.
func (s *Service) janitor() {
	defer s.wg.Done()
	t := time.NewTicker(max(s.opts.PrepareTTL/4, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case now := <-t.C:
			s.expirePrepared(now)
		case <-s.baseCtx.Done():
			return
		}
	}
}

// expirePrepared drops preparations older than the TTL at now, with any
// files already staged for them, and returns how many it dropped.
func (s *Service) expirePrepared(now time.Time) int {
	s.mu.Lock()
	var old []*preparation
	for id, p := range s.mu.prepared {
		if now.Sub(p.created) >= s.opts.PrepareTTL {
			old = append(old, p)
			delete(s.mu.prepared, id)
			s.mu.preparedBytes -= p.size
		}
	}
	s.updateIdleLocked()
	s.mu.Unlock()
	for _, p := range old {
		s.log.Info("preparation expired without Run", "preparation_id", p.id)
		s.cleanup(p.id, p.dir)
	}
	return len(old)
}
