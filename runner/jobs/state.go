package jobs

import (
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
)

// Job state policy, kept as pure functions so it can be tested on its own.
//
// Lifecycle: STOPPED (accepted by Run) → STARTING (Execute called) →
// RUNNING (Job.Running) → DONE | FAILED; Cancel moves a live job to
// CANCELLING and it ends CANCELLED; Drain moves it to DRAINING and it ends
// DRAINED (or FAILED / CANCELLED).

type state = jobpb.JobState_Enum

// transitions lists, for each non-terminal state, the states it may move to.
var transitions = map[state][]state{
	jobpb.JobState_STOPPED:    {jobpb.JobState_STARTING, jobpb.JobState_CANCELLING, jobpb.JobState_FAILED, jobpb.JobState_CANCELLED},
	jobpb.JobState_STARTING:   {jobpb.JobState_RUNNING, jobpb.JobState_CANCELLING, jobpb.JobState_DRAINING, jobpb.JobState_DONE, jobpb.JobState_FAILED, jobpb.JobState_CANCELLED},
	jobpb.JobState_RUNNING:    {jobpb.JobState_CANCELLING, jobpb.JobState_DRAINING, jobpb.JobState_DONE, jobpb.JobState_FAILED, jobpb.JobState_CANCELLED},
	jobpb.JobState_DRAINING:   {jobpb.JobState_CANCELLING, jobpb.JobState_DRAINED, jobpb.JobState_FAILED, jobpb.JobState_CANCELLED},
	jobpb.JobState_CANCELLING: {jobpb.JobState_CANCELLED},
}

// canTransition reports whether a job in state from may move to state to.
// Late or duplicate reports (Running after Cancel, a second Cancel) are
// simply not transitions, so callers drop them.
func canTransition(from, to state) bool {
	for _, s := range transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// isTerminal reports whether no further state changes can happen.
func isTerminal(s state) bool {
	switch s {
	case jobpb.JobState_DONE, jobpb.JobState_FAILED, jobpb.JobState_CANCELLED,
		jobpb.JobState_DRAINED, jobpb.JobState_UPDATED:
		return true
	}
	return false
}

// finalState decides how a job ended once Execute has returned. A job whose
// context was cancelled (by Cancel or server shutdown) is CANCELLED whatever
// Execute returned, since a cancelled engine typically reports ctx.Err().
// A job already CANCELLING ends CANCELLED even if Execute won the race and
// returned before seeing the cancellation: the result is always a legal
// transition from cur, so every job reaches a terminal state.
func finalState(cur state, execErr error, ctxCancelled bool) state {
	switch {
	case ctxCancelled || cur == jobpb.JobState_CANCELLING:
		return jobpb.JobState_CANCELLED
	case execErr != nil:
		return jobpb.JobState_FAILED
	case cur == jobpb.JobState_DRAINING:
		return jobpb.JobState_DRAINED
	default:
		return jobpb.JobState_DONE
	}
}
