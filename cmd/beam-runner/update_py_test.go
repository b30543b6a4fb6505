package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/beam-runner/beam-runner/testsupport/counting"
	"github.com/beam-runner/beam-runner/testsupport/jobtest"
	"github.com/beam-runner/beam-runner/testsupport/serverproc"
	"github.com/beam-runner/beam-runner/testsupport/testwait"
)

// TestUpdatePythonWhileRunning: a Python streaming job
// (testdata/update_counts.py: a periodic impulse, a stateful DoFn with
// each key's running count and an event-time timer chain, a windowed
// count), submitted with --job_name, is updated twice while it runs by
// Python's own options (Beam's GoogleCloudOptions declares --update,
// --job_name and --transform_name_mapping): first with a stateless
// step added, then with the stateful step renamed and mapped. Every
// (key, window) is counted exactly once across the three jobs, and each
// key's running count and last flushed count reach its total.
func TestUpdatePythonWhileRunning(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Python SDK workers")
	}
	pool, err := serverproc.StartPythonWorkerPool("python3", filepath.Join(t.TempDir(), "pool.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Stop()
	env := jobtest.StartWith(t, &jobtest.Options{StateDir: t.TempDir()})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now().Truncate(time.Second).Add(5 * time.Second)
	end, interval := start.Add(16*time.Second), 100*time.Millisecond
	submit := func(version int, flags ...string) string {
		t.Helper()
		args := append([]string{"testdata/update_counts.py", "--endpoint=" + env.Endpoint, "--worker_pool=" + pool.Addr,
			fmt.Sprintf("--start=%d", start.Unix()), fmt.Sprintf("--seconds=%g", end.Sub(start).Seconds()),
			fmt.Sprintf("--interval=%g", interval.Seconds()), fmt.Sprintf("--version=%d", version), "--job_name=update-py"}, flags...)
		cmd := exec.CommandContext(ctx, "python3", args...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		id, err := cmd.Output()
		if err != nil {
			t.Fatalf("update_counts.py version %d %v: %v\n%s", version, flags, err, stderr.String())
		}
		return strings.TrimSpace(string(id))
	}
	fired := func(id string, n int) {
		testwait.Until(t, time.Minute, "windows of job "+id+" to fire", func() bool {
			c, _ := countingMetrics(t, ctx, env, id)
			return countPrefix(c, "fires_") >= n*counting.Keys
		})
	}
	first := submit(1)
	fired(first, 1)
	second := submit(2, "--update")
	if err := env.AwaitState(ctx, first, jobpb.JobState_CANCELLED, time.Minute); err != nil {
		t.Errorf("the updated job: %v", err)
	}
	fired(second, 4)
	third := submit(3, "--update", `--transform_name_mapping={"Running":"Tally"}`)
	if err := env.AwaitState(ctx, third, jobpb.JobState_DONE, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	for id, from := range map[string]string{second: first, third: second} {
		if msgs, err := jobtest.Messages(ctx, env.Client, id); err != nil || !strings.Contains(msgs, "job updated job "+from+" from savepoint ") {
			t.Errorf("job %s's messages (%v) do not say it updated %s:\n%s", id, err, from, msgs)
		}
	}
	wantC, wantM := expectedCounting(start, end, interval)
	gotC, gotM := countingMetrics(t, ctx, env, third)
	checkCounting(t, gotC, wantC, gotM, wantM)
}
