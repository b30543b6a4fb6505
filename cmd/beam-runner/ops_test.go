package main

import (
	"bufio"
	"context"
	"encoding/json"
	"github.com/beam-runner/beam-runner/testsupport/syncbuf"
	"strings"
	"testing"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/beam-runner/beam-runner/runner/metrics"
	"github.com/beam-runner/beam-runner/testsupport/jobtest"
	"github.com/beam-runner/beam-runner/testsupport/testwait"
)

// The operator commands against a real server running real jobs.

func runCLI(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out strings.Builder
	code, ok := runCommand(args[0], args[1:], &out)
	if !ok {
		t.Fatalf("no command %q", args[0])
	}
	return code, out.String()
}

func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	code, out := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("beam-runner %s: exit %d, output:\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

func TestJobsStatusAndLogsOfAFinishedJob(t *testing.T) {
	env := jobtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	id, pipe, err := env.Submit(ctx, "cli-batch", jobtest.Batch(1000))
	if err != nil {
		t.Fatal(err)
	}
	if err := env.AwaitState(ctx, id, jobpb.JobState_DONE, time.Minute); err != nil {
		t.Fatal(err)
	}
	ep := "--endpoint=" + env.Endpoint

	out := mustRun(t, "jobs", ep)
	if !strings.Contains(out, "ID") || !lineHas(out, id, "cli-batch", "DONE") {
		t.Errorf("jobs: no line with the job, its name and DONE:\n%s", out)
	}
	var list []jobJSON
	if err := json.Unmarshal([]byte(mustRun(t, "jobs", ep, "--json")), &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0] != (jobJSON{ID: id, Name: "cli-batch", State: "DONE"}) {
		t.Errorf("jobs --json = %+v", list)
	}

	out = mustRun(t, "status", ep, id)
	if !strings.Contains(out, "DONE") || !strings.Contains(out, "PCOLLECTION") {
		t.Errorf("status: want the state and element counts:\n%s", out)
	}
	var st statusJSON
	if err := json.Unmarshal([]byte(mustRun(t, "status", ep, "--json", id)), &st); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{}
	resp, err := env.Client.GetJobMetrics(ctx, &jobpb.GetJobMetricsRequest{JobId: id})
	if err != nil {
		t.Fatal(err)
	}
	for _, mi := range resp.GetMetrics().GetCommitted() {
		if r, err := metrics.Read(mi); err == nil && r.URN == metrics.UrnElementCount {
			want[pipe.GetComponents().GetPcollections()[r.Labels["PCOLLECTION"]].GetUniqueName()] += int64(r.Value)
		}
	}
	if st.State != "DONE" || len(st.PCollections) == 0 || !equalCounts(st.PCollections, want) {
		t.Errorf("status --json: state %s, counts %v; want DONE and %v", st.State, st.PCollections, want)
	}

	out = mustRun(t, "logs", ep, id)
	for _, s := range []string{"RUNNING", "DONE"} {
		if !strings.Contains(out, "state    "+s) {
			t.Errorf("logs lacks state %s:\n%s", s, out)
		}
	}
	lines := jsonLines(t, mustRun(t, "logs", ep, "--json", id))
	if last := lines[len(lines)-1]; last.State != "DONE" {
		t.Errorf("logs --json ends with %+v, want state DONE", last)
	}

	if code, out := runCLI(t, "status", ep, "no-such-job"); code != 1 || !strings.Contains(out, "no-such-job") {
		t.Errorf("status of an unknown job: exit %d, output %q; want 1 and an error naming it", code, out)
	}
}

// TestCancelWhileFollowingLogs cancels a streaming job while `logs -f`
// follows it: cancel reports CANCELLED and the follower ends with it.
func TestCancelWhileFollowingLogs(t *testing.T) {
	env := jobtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	id, _, err := env.Submit(ctx, "cli-cancel", jobtest.Streaming(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if err := env.AwaitState(ctx, id, jobpb.JobState_RUNNING, time.Minute); err != nil {
		t.Fatal(err)
	}
	ep := "--endpoint=" + env.Endpoint
	var follow syncbuf.Buffer
	followed := make(chan int, 1)
	go func() {
		code, _ := runCommand("logs", []string{ep, "-f", "--json", id}, &follow)
		followed <- code
	}()
	// Cancel only once the follower has the stream: its replay of the
	// job's history ends with RUNNING.
	testwait.Until(t, time.Minute, "logs -f to replay the job's RUNNING state", func() bool {
		return strings.Contains(follow.String(), `"state":"RUNNING"`)
	})
	out := mustRun(t, "cancel", ep, "--wait", id)
	if !strings.Contains(out, "CANCELLED") {
		t.Errorf("cancel --wait: %q, want CANCELLED", out)
	}
	select {
	case code := <-followed:
		if code != 0 {
			t.Errorf("logs -f exited %d:\n%s", code, follow.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("logs -f did not end after the job was cancelled", "\n"+testwait.Goroutines())
	}
	lines := jsonLines(t, follow.String())
	if last := lines[len(lines)-1]; last.State != "CANCELLED" {
		t.Errorf("logs -f ended with %+v, want state CANCELLED", last)
	}
}

func TestDrainCommandDrainsAStreamingJob(t *testing.T) {
	env := jobtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	id, _, err := env.Submit(ctx, "cli-drain", jobtest.Streaming(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if err := env.AwaitState(ctx, id, jobpb.JobState_RUNNING, time.Minute); err != nil {
		t.Fatal(err)
	}
	var got jobJSON
	if err := json.Unmarshal([]byte(mustRun(t, "drain", "--endpoint="+env.Endpoint, "--wait", "--json", id)), &got); err != nil {
		t.Fatal(err)
	}
	if got != (jobJSON{ID: id, State: "DRAINED"}) {
		t.Errorf("drain --wait --json = %+v, want DRAINED", got)
	}
}

func lineHas(out string, parts ...string) bool {
	for _, l := range strings.Split(out, "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(l, p)
		}
		if all {
			return true
		}
	}
	return false
}

func equalCounts(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func jsonLines(t *testing.T, out string) []logJSON {
	t.Helper()
	var lines []logJSON
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var l logJSON
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		lines = append(lines, l)
	}
	if len(lines) == 0 {
		t.Fatal("no JSON lines")
	}
	return lines
}
