package jobs

import (
	"sort"
)

// DefaultMaxFinishedJobs is how many ended jobs a server keeps by default:
// each holds its pipeline, kept messages and metrics in memory and in the
// store, so a long-running server would otherwise grow without end.
const DefaultMaxFinishedJobs = 1000

// maxFinished is the cap on ended jobs kept; negative: none.
func (s *Service) maxFinished() int {
	if s.opts.MaxFinishedJobs == 0 {
		return DefaultMaxFinishedJobs
	}
	return s.opts.MaxFinishedJobs
}

// ended notes a job that reached a terminal state and forgets the oldest
// ended jobs past the cap, in memory and in the store.
func (s *Service) ended(id string) {
	s.mu.Lock()
	s.mu.finished = append(s.mu.finished, id)
	var drop []string
	if max := s.maxFinished(); max >= 0 && len(s.mu.finished) > max {
		n := len(s.mu.finished) - max
		drop = append(drop, s.mu.finished[:n]...)
		s.mu.finished = append([]string(nil), s.mu.finished[n:]...)
		for _, old := range drop {
			delete(s.mu.jobs, old)
		}
	}
	s.mu.Unlock()
	for _, old := range drop {
		s.forgetSaved(old)
	}
}

// forgetSaved deletes an ended job's record from the store.
func (s *Service) forgetSaved(id string) {
	if s.opts.Store == nil {
		return
	}
	b := s.opts.Store.NewBatch()
	b.DeletePrefix(jobKey(id, ""))
	if err := b.Commit(false); err != nil {
		s.log.Warn("dropping an old job's record", "job_id", id, "error", err)
	}
}

// endedInOrder lists restored jobs that had ended, oldest end first, so
// the cap drops the same jobs it would have had the server kept running.
func endedInOrder(recs map[string]*record) []string {
	type end struct {
		id string
		at int64
	}
	var ends []end
	for id, r := range recs {
		if isTerminal(r.state()) {
			ends = append(ends, end{id, r.stateEvent().GetTimestamp().AsTime().UnixNano()})
		}
	}
	sort.Slice(ends, func(i, j int) bool {
		if ends[i].at != ends[j].at {
			return ends[i].at < ends[j].at
		}
		return ends[i].id < ends[j].id
	})
	out := make([]string, len(ends))
	for i, e := range ends {
		out[i] = e.id
	}
	return out
}
