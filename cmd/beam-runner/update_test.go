package main

import (
	"context"
	"strings"
	"testing"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/beam-runner/beam-runner/runner/jobs"
	"github.com/beam-runner/beam-runner/testsupport/counting"
	"github.com/beam-runner/beam-runner/testsupport/jobtest"
	"github.com/beam-runner/beam-runner/testsupport/testwait"
)

// TestUpdateTwiceWhileRunning: a streaming job with user state, timers
// and a windowed count over a periodic impulse is updated twice while
// it runs (--update with its name): first with a stateless step added
// (another fused plan), then with its stateful step renamed and
// --transform_name_mapping. An update that changes the stateful step's
// value coder is refused before the running job stops, naming the
// step; that job goes on. Every (key, window) is counted exactly once
// across the three jobs, each key's running count (user state) reaches
// its total, and so does the count its event-time timer chain last
// flushed (only a timer carried across both updates re-arms the chain).
// Dropping the user state or the timers at the remap fails it, naming
// the key and what did not carry over.
func TestUpdateTwiceWhileRunning(t *testing.T) {
	env := jobtest.StartWith(t, &jobtest.Options{StateDir: t.TempDir()})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	start := time.Now().Truncate(time.Second).Add(time.Second)
	end, interval := start.Add(10*time.Second), 20*time.Millisecond
	first, _, err := env.Submit(ctx, "counting", counting.Pipeline(start, end, interval, false))
	if err != nil {
		t.Fatal(err)
	}
	fired := func(id string, n int) {
		testwait.Until(t, time.Minute, "windows of job "+id+" to fire", func() bool {
			c, _ := countingMetrics(t, ctx, env, id)
			return countPrefix(c, "fires_") >= n*counting.Keys
		})
	}
	fired(first, 1)
	update := map[string]any{jobs.UpdateOption: true}
	// Refused: the stateful step's value coder changed.
	_, _, err = env.SubmitWith(ctx, "counting", update, counting.Pipeline(start, end, interval, true))
	for _, want := range []string{"cannot update job " + first + "; it goes on running", `stateful step "running/counting.runningFn": its value coder changed`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("a changed value coder: %v; want it refused saying %q", err, want)
		}
	}
	if err := env.AwaitState(ctx, first, jobpb.JobState_RUNNING, time.Second); err != nil {
		t.Errorf("the job after a refused update: %v", err)
	}
	second, _, err := env.SubmitWith(ctx, "counting", update, counting.Version(start, end, interval, counting.Variant{Scale: true}))
	if err != nil {
		t.Fatalf("update with a stateless step added: %v", err)
	}
	if err := env.AwaitState(ctx, first, jobpb.JobState_CANCELLED, time.Minute); err != nil {
		t.Errorf("the updated job: %v", err)
	}
	fired(second, 3)
	renamed := counting.Version(start, end, interval, counting.Variant{Scale: true, RunningScope: "tally"})
	third, _, err := env.SubmitWith(ctx, "counting", map[string]any{jobs.UpdateOption: true, jobs.TransformNameMappingOption: `{"running":"tally"}`}, renamed)
	if err != nil {
		t.Fatalf("update with the stateful step renamed and mapped: %v", err)
	}
	if err := env.AwaitState(ctx, third, jobpb.JobState_DONE, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	if msgs, err := jobtest.Messages(ctx, env.Client, third); err != nil || !strings.Contains(msgs, "job updated job "+second+" from savepoint ") {
		t.Errorf("the third job's messages (%v) do not say it updated the second:\n%s", err, msgs)
	}
	wantC, wantM := expectedCounting(start, end, interval)
	gotC, gotM := countingMetrics(t, ctx, env, third)
	checkCounting(t, gotC, wantC, gotM, wantM)
}
