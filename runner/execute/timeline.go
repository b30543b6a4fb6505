package execute

import (
	"log/slog"
	"sync"
	"time"
)

// timeline records how long each phase of a job took, for one debug line
// per job ("job timeline"): where a small job's time goes (planning,
// workers connecting, registration, the stages, teardown) without a
// profiler, for any SDK. Phases are the time since the previous mark, so
// they add up to the job's time in the executor.
type timeline struct {
	mu     sync.Mutex
	last   time.Time
	start  time.Time
	phases []slog.Attr
}

func newTimeline() *timeline {
	now := time.Now()
	return &timeline{start: now, last: now}
}

// mark ends phase now.
func (t *timeline) mark(phase string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	t.phases = append(t.phases, slog.Float64(phase+"_ms", ms(now.Sub(t.last))))
	t.last = now
}

// log writes the timeline, with the total, at debug level.
func (t *timeline) log(log *slog.Logger, jobID string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	args := []any{"job", jobID, slog.Float64("total_ms", ms(t.last.Sub(t.start)))}
	for _, a := range t.phases {
		args = append(args, a)
	}
	log.Debug("job timeline", args...)
}

// ms is d in milliseconds, to a tenth.
func ms(d time.Duration) float64 { return float64(d.Microseconds()/100) / 10 }
