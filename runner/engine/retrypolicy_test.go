package engine

import "testing"

func TestRetryVerdict(t *testing.T) {
	lost := Failure{Worker: "w1", Workers: 1}
	user := func(cause string, workers int) Failure {
		return Failure{User: true, Cause: cause, Worker: "w1", Workers: workers}
	}
	for _, tc := range []struct {
		name         string
		attempt, max int
		causes       []string
		f            Failure
		again        bool
		why          string
	}{
		{"lost worker, attempts left", 1, 4, nil, lost, true, ""},
		{"lost worker on the last attempt", 4, 4, nil, lost, false, "giving up after 4 attempt(s)"},
		{"lost worker after user failures", 2, 4, []string{"E: x"}, lost, true, ""},
		{"user failure, one worker", 1, 4, nil, user("E: x", 1), false, "not retried: user code failed and the job has no other worker to run it on"},
		{"user failure, two workers", 1, 4, nil, user("E: x", 2), true, ""},
		{"same user failure twice", 2, 4, []string{"E: x"}, user("E: x", 2), false, "not retried: user code failed the same way twice"},
		{"same failure, a lost worker between", 3, 4, []string{"E: x"}, user("E: x", 3), false, "not retried: user code failed the same way twice"},
		{"another user failure", 2, 4, []string{"E: x"}, user("E: y", 2), true, ""},
		{"another user failure, last attempt", 4, 4, []string{"E: x", "E: y", "E: z"}, user("E: w", 2), false, "giving up after 4 attempt(s)"},
		{"one attempt allowed", 1, 1, nil, user("E: x", 4), false, "giving up after 1 attempt(s)"},
	} {
		again, why := retryVerdict(tc.attempt, tc.max, tc.causes, tc.f)
		if again != tc.again || why != tc.why {
			t.Errorf("%s: retryVerdict = %v, %q; want %v, %q", tc.name, again, why, tc.again, tc.why)
		}
	}
}
