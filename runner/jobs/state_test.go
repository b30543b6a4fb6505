package jobs

import (
	"errors"
	"testing"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
)

func TestCanTransition(t *testing.T) {
	tests := []struct {
		from, to state
		want     bool
	}{
		{jobpb.JobState_STOPPED, jobpb.JobState_STARTING, true},
		{jobpb.JobState_STARTING, jobpb.JobState_RUNNING, true},
		{jobpb.JobState_STARTING, jobpb.JobState_DONE, true}, // never called Running
		{jobpb.JobState_RUNNING, jobpb.JobState_CANCELLING, true},
		{jobpb.JobState_CANCELLING, jobpb.JobState_CANCELLED, true},
		{jobpb.JobState_DRAINING, jobpb.JobState_DRAINED, true},
		{jobpb.JobState_CANCELLING, jobpb.JobState_RUNNING, false}, // late Running
		{jobpb.JobState_CANCELLING, jobpb.JobState_CANCELLING, false},
		{jobpb.JobState_RUNNING, jobpb.JobState_RUNNING, false},
		{jobpb.JobState_RUNNING, jobpb.JobState_STARTING, false},
		{jobpb.JobState_DONE, jobpb.JobState_FAILED, false},
		{jobpb.JobState_CANCELLED, jobpb.JobState_CANCELLING, false},
	}
	for _, tc := range tests {
		if got := canTransition(tc.from, tc.to); got != tc.want {
			t.Errorf("canTransition(%v, %v) = %v, want %v", tc.from, tc.to, got, tc.want)
		}
	}
}

func TestTerminalStatesHaveNoTransitions(t *testing.T) {
	for s := range jobpb.JobState_Enum_name {
		st := state(s)
		if isTerminal(st) && len(transitions[st]) > 0 {
			t.Errorf("terminal state %v has transitions", st)
		}
	}
}

func TestFinalState(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		cur       state
		err       error
		cancelled bool
		want      state
	}{
		{jobpb.JobState_RUNNING, nil, false, jobpb.JobState_DONE},
		{jobpb.JobState_STARTING, nil, false, jobpb.JobState_DONE},
		{jobpb.JobState_RUNNING, boom, false, jobpb.JobState_FAILED},
		{jobpb.JobState_CANCELLING, boom, true, jobpb.JobState_CANCELLED},
		{jobpb.JobState_CANCELLING, nil, true, jobpb.JobState_CANCELLED},
		{jobpb.JobState_RUNNING, nil, true, jobpb.JobState_CANCELLED}, // server shutdown
		{jobpb.JobState_DRAINING, nil, false, jobpb.JobState_DRAINED},
		{jobpb.JobState_DRAINING, boom, false, jobpb.JobState_FAILED},
		{jobpb.JobState_CANCELLING, nil, false, jobpb.JobState_CANCELLED}, // returned before cancel()
	}
	for _, tc := range tests {
		if got := finalState(tc.cur, tc.err, tc.cancelled); got != tc.want {
			t.Errorf("finalState(%v, %v, %v) = %v, want %v", tc.cur, tc.err, tc.cancelled, got, tc.want)
		}
	}
}

// Every job must reach a terminal state: whatever Execute returns, the final
// state is a legal move from any state a started job can be in.
func TestFinalStateAlwaysLegal(t *testing.T) {
	for from := range transitions {
		if from == jobpb.JobState_STOPPED {
			continue // Execute is only called after STARTING
		}
		for _, err := range []error{nil, errors.New("x")} {
			for _, c := range []bool{false, true} {
				if got := finalState(from, err, c); !canTransition(from, got) || !isTerminal(got) {
					t.Errorf("finalState(%v, %v, %v) = %v: not a legal terminal move", from, err, c, got)
				}
			}
		}
	}
}
