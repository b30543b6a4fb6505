package engine

import "github.com/beam-runner/beam-runner/runner/coders"

// CheckpointFlight asks every running bundle of a splittable stage that
// has run at least minAge (milliseconds) to checkpoint itself: to stop at
// what it has read and give the rest back as a residual. A checkpoint
// holds what a running bundle owns, so after a crash a source bundle
// that ran for minutes is read again from its start; checkpointed this
// way, its progress is committed and the next checkpoint holds it.
// Draining jobs have their own checkpoints (Drain).
func (e *Engine) CheckpointFlight(minAge int64) {
	if e.draining {
		return
	}
	for _, st := range e.flow.stages {
		if !st.spec.Splittable {
			continue
		}
		for _, b := range oldestFirst(st.flight) {
			if e.flow.now-b.started < minAge || e.flow.now-b.splitAt < splitMinAge {
				continue
			}
			b.splitAt = e.flow.now // keeps the dynamic split policy off it
			e.splits = append(e.splits, SplitRequest{Bundle: b.ID})
		}
	}
}

// Finished returns the stages that are done for good, in plan order:
// their output watermark is at the end of time and nothing of theirs
// runs. In a resumed batch job these are the stages it does not run again.
func (e *Engine) Finished() []string {
	var out []string
	for _, st := range e.flow.stages {
		if st.outWM >= coders.MaxTimestamp && len(st.flight) == 0 && len(st.pending) == 0 {
			out = append(out, st.spec.ID)
		}
	}
	return out
}
