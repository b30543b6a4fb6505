package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/beam-runner/beam-runner/runner/jobs"
	"github.com/beam-runner/beam-runner/runner/metrics"
	"github.com/beam-runner/beam-runner/runner/savepoint"
	"github.com/beam-runner/beam-runner/testsupport/counting"
	"github.com/beam-runner/beam-runner/testsupport/jobtest"
	"github.com/beam-runner/beam-runner/testsupport/testwait"
)

// countingMetrics reads jobtest.Counting's committed metrics of a job:
// counters by name, and the max of each distribution.
func countingMetrics(t *testing.T, ctx context.Context, env *jobtest.Env, id string) (counters, maxes map[string]int64) {
	t.Helper()
	resp, err := env.Client.GetJobMetrics(ctx, &jobpb.GetJobMetricsRequest{JobId: id})
	if err != nil {
		t.Fatal(err)
	}
	counters, maxes = map[string]int64{}, map[string]int64{}
	for _, mi := range resp.GetMetrics().GetCommitted() {
		r, err := metrics.Read(mi)
		if err != nil || r.Labels["NAMESPACE"] != "counting" {
			continue
		}
		switch r.Type {
		case "counter":
			counters[r.Labels["NAME"]] += int64(r.Value)
		case "distribution":
			maxes[r.Labels["NAME"]] = max(maxes[r.Labels["NAME"]], int64(r.Max))
		}
	}
	return counters, maxes
}

// expectedCounting is what jobtest.Counting over [start, end) every
// interval commits once it is done: each (window, key)'s count, fired
// once, and each key's running count.
func expectedCounting(start, end time.Time, interval time.Duration) (counters, maxes map[string]int64) {
	counters, maxes = map[string]int64{}, map[string]int64{}
	for i := int64(0); i < int64(end.Sub(start)/interval); i++ {
		ts := start.UnixMilli() + i*interval.Milliseconds()
		k := counting.Key(ts, interval.Milliseconds())
		suffix := fmt.Sprintf("_w%d_k%d", ts-ts%1000, k)
		counters["count"+suffix]++
		counters["fires"+suffix] = 1
		maxes[fmt.Sprintf("seen_k%d", k)]++
		maxes[fmt.Sprintf("flushed_k%d", k)]++
	}
	return counters, maxes
}

// checkCounting checks a counting job's counters (each (key, window)
// once and exact, none extra) and the running counts it carried.
func checkCounting(t *testing.T, gotC, wantC, gotM, wantM map[string]int64) {
	t.Helper()
	for name, want := range wantC {
		if gotC[name] != want {
			t.Errorf("%s = %d, want %d", name, gotC[name], want)
		}
	}
	for name := range gotC {
		if _, ok := wantC[name]; !ok {
			t.Errorf("unexpected counter %s = %d", name, gotC[name])
		}
	}
	checkCarried(t, gotM, wantM)
}

// checkCarried checks each key's last running count (seen_k*: its user
// state carried over) and last flushed count (flushed_k*: its timer
// chain carried over, which only a carried timer re-arms).
func checkCarried(t *testing.T, got, want map[string]int64) {
	t.Helper()
	for _, name := range slices.Sorted(maps.Keys(want)) {
		switch {
		case got[name] == want[name]:
		case strings.HasPrefix(name, "flushed_"):
			t.Errorf("%s: the timer last flushed a count of %d, want %d (the timer chain did not carry over whole)", name, got[name], want[name])
		default:
			t.Errorf("%s's last running count %d, want %d (the state did not carry over whole)", name, got[name], want[name])
		}
	}
}

// TestSavepointThenRestoreCountsEachWindowOnce: a streaming job with
// user state (each key's running count) and a windowed count over a
// periodic impulse, on a server with a --state_dir (so it checkpoints
// too), writes a savepoint while ticks flow (the job goes on; the
// savepoint goes under the state dir), then is cancelled at a second
// savepoint (cancel --savepoint), which is copied; a new job of the same
// pipeline submitted to another server, with another --state_dir, with
// --from_savepoint starts from the copy and runs to the impulse's end. Every (key, window) is counted exactly and
// fired once across the two jobs (the new one carries the old one's
// committed metrics), and each key's running count reaches its total: the
// user state carried over.
func TestSavepointThenRestoreCountsEachWindowOnce(t *testing.T) {
	stateDir := t.TempDir()
	env := jobtest.StartWith(t, &jobtest.Options{StateDir: stateDir})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now().Truncate(time.Second).Add(time.Second)
	end, interval := start.Add(8*time.Second), 20*time.Millisecond
	pipeline := counting.Pipeline(start, end, interval, false)
	old, _, err := env.Submit(ctx, "counting", pipeline)
	if err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, time.Minute, "two windows of job "+old+" to fire", func() bool {
		c, _ := countingMetrics(t, ctx, env, old)
		return countPrefix(c, "fires_") >= 2*counting.Keys
	})
	// The first savepoint goes where none is named: under the state dir.
	var taken savepointJSON
	if err := json.Unmarshal([]byte(mustRun(t, "savepoint", "--endpoint="+env.Endpoint, "--json", old)), &taken); err != nil {
		t.Fatal(err)
	}
	first := taken.Dir
	if filepath.Dir(first) != filepath.Join(stateDir, "savepoints") || !strings.HasPrefix(filepath.Base(first), old+"-") || taken.State != "RUNNING" {
		t.Errorf("savepoint --json = %+v; want a new directory under %s and the job running", taken, filepath.Join(stateDir, "savepoints"))
	}
	m := readManifest(t, first)
	if m.JobID != old || m.Sequence != taken.Sequence || len(m.Steps) != 2 || m.Transforms[m.Steps[0].TransformID] != m.Steps[0].Name {
		t.Errorf("first savepoint's manifest: %+v", m)
	}
	dirs := t.TempDir()
	second := filepath.Join(dirs, "second")
	var got savepointJSON
	if err := json.Unmarshal([]byte(mustRun(t, "cancel", "--endpoint="+env.Endpoint, "--savepoint", "--savepoint_dir="+second, "--wait", "--json", old)), &got); err != nil {
		t.Fatal(err)
	}
	t.Logf("savepoints at checkpoints %d and %d", taken.Sequence, got.Sequence)
	// The job is durable, so its periodic checkpoints count in the
	// sequence too.
	if got.ID != old || got.Dir != second || got.Sequence <= taken.Sequence || got.State != "CANCELLED" {
		t.Errorf("cancel --savepoint --wait --json = %+v; want job %s's savepoint after %d in %s, cancelled", got, old, taken.Sequence, second)
	}
	if st := readManifest(t, second); st.Sequence != got.Sequence {
		t.Errorf("second savepoint's sequence %d, want %d", st.Sequence, got.Sequence)
	}
	if m := readManifest(t, first); m.JobID != old {
		t.Errorf("the first savepoint, after its job ended: %+v", m)
	}
	wantC, wantM := expectedCounting(start, end, interval)
	oldC, _ := countingMetrics(t, ctx, env, old)
	if fired, all := countPrefix(oldC, "fires_"), countPrefix(wantC, "fires_"); fired >= all {
		t.Fatalf("the old job fired all %d panes before its savepoint: nothing was left to restore", all)
	} else {
		t.Logf("the old job fired %d of %d panes before its savepoint", fired, all)
	}
	// The new job's impulse would tick a minute earlier: a stateless
	// change, which a job started from the savepoint never sees (its
	// impulse had emitted its sequence already), and a fresh start would.
	moved := counting.Pipeline(start.Add(-time.Minute), end.Add(-time.Minute), interval, false)
	// The savepoint is copied, as to another machine, and the new job
	// runs on another server.
	copied := filepath.Join(t.TempDir(), "copied")
	if err := os.CopyFS(copied, os.DirFS(second)); err != nil {
		t.Fatal(err)
	}
	env2 := jobtest.StartWith(t, &jobtest.Options{StateDir: t.TempDir()})
	restored, _, err := env2.SubmitWith(ctx, "counting", map[string]any{jobs.FromSavepointOption: copied}, moved)
	if err != nil {
		t.Fatal(err)
	}
	if err := env2.AwaitState(ctx, restored, jobpb.JobState_DONE, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	if msgs, err := jobtest.Messages(ctx, env2.Client, restored); err != nil || !strings.Contains(msgs, "job started from savepoint "+copied+": ") {
		t.Errorf("the restored job's messages (%v) do not say it started from the savepoint:\n%s", err, msgs)
	}
	gotC, gotM := countingMetrics(t, ctx, env2, restored)
	checkCounting(t, gotC, wantC, gotM, wantM)
}

func countPrefix(m map[string]int64, prefix string) int {
	n := 0
	for name := range m {
		if strings.HasPrefix(name, prefix) {
			n++
		}
	}
	return n
}

func readManifest(t *testing.T, dir string) savepoint.Manifest {
	t.Helper()
	sp, err := savepoint.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	return sp.Manifest
}

// TestDrainWithSavepoint: drain --savepoint_dir (which implies
// --savepoint) writes a savepoint, then the job drains.
func TestDrainWithSavepoint(t *testing.T) {
	env := jobtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	id, _, err := env.Submit(ctx, "counting", counting.Pipeline(start, start.Add(time.Hour), 50*time.Millisecond, false))
	if err != nil {
		t.Fatal(err)
	}
	if err := env.AwaitState(ctx, id, jobpb.JobState_RUNNING, time.Minute); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "sp")
	var got savepointJSON
	if err := json.Unmarshal([]byte(mustRun(t, "drain", "--endpoint="+env.Endpoint, "--savepoint_dir="+dir, "--wait", "--json", id)), &got); err != nil {
		t.Fatal(err)
	}
	if got != (savepointJSON{ID: id, Dir: dir, Sequence: 1, State: "DRAINED"}) {
		t.Errorf("drain --savepoint --wait --json = %+v", got)
	}
	if m := readManifest(t, dir); m.JobID != id {
		t.Errorf("the savepoint's job %q, want %q", m.JobID, id)
	}
	code, out := runCLI(t, "savepoint", "--endpoint="+env.Endpoint, id, filepath.Join(t.TempDir(), "late"))
	if code != 1 || !strings.Contains(out, "only a RUNNING job can write a savepoint") {
		t.Errorf("a savepoint of a drained job: exit %d, %q; want it refused", code, out)
	}
}

// TestFromSavepointRefusals: a job submitted --from_savepoint is refused
// at Prepare, before any job exists, when its stateful step's value
// coder changed (the error names the step and the coders), when a step
// was added (naming it), when the savepoint is
// missing or damaged (naming its path) and when the savepoint's format
// is newer than the server's (named in the error); the server goes on.
func TestFromSavepointRefusals(t *testing.T) {
	env := jobtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	end, interval := start.Add(time.Hour), 50*time.Millisecond
	old, _, err := env.Submit(ctx, "counting", counting.Pipeline(start, end, interval, false))
	if err != nil {
		t.Fatal(err)
	}
	if err := env.AwaitState(ctx, old, jobpb.JobState_RUNNING, time.Minute); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "sp")
	mustRun(t, "cancel", "--endpoint="+env.Endpoint, "--savepoint", "--savepoint_dir="+dir, "--wait", old)
	jobsBefore := countJobs(t, ctx, env)

	_, _, err = env.SubmitWith(ctx, "counting", map[string]any{jobs.FromSavepointOption: dir}, counting.Pipeline(start, end, interval, true))
	t.Logf("refused: %v", err)
	for _, want := range []string{
		"cannot start from savepoint " + dir,
		`stateful step "running/counting.runningFn": its value coder changed from beam:coder:length_prefix:v1(beam:go:coder:custom:v1`,
		"to beam:coder:string_utf8:v1",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("submitting a changed value coder: %v; want it refused saying %q", err, want)
		}
	}

	// The stateful step renamed, with no mapping: its state would be
	// lost, and the refusal names it and the ways out. (A step added is
	// no longer refused: the checkpoint is remapped, TestUpdate*.)
	_, _, err = env.SubmitWith(ctx, "counting", map[string]any{jobs.FromSavepointOption: dir},
		counting.Version(start, end, interval, counting.Variant{RunningScope: "tally"}))
	for _, want := range []string{"cannot start from savepoint " + dir, `stateful step "running/counting.runningFn" is not in the new pipeline`, "--transform_name_mapping", "--allow_dropped_state"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("submitting a renamed stateful step: %v; want it refused saying %q", err, want)
		}
	}
	// A missing savepoint, and a damaged one, are refused naming their
	// path.
	missing := filepath.Join(t.TempDir(), "gone")
	_, _, err = env.SubmitWith(ctx, "counting", map[string]any{jobs.FromSavepointOption: missing}, counting.Pipeline(start, end, interval, false))
	if want := "savepoint " + missing + ": stat " + missing + ": no such file"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("submitting from a missing savepoint: %v; want it refused saying %q", err, want)
	}
	damaged := filepath.Join(t.TempDir(), "damaged")
	if err := os.CopyFS(damaged, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(damaged, savepoint.CheckpointFile), []byte("BRCKPT?"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err = env.SubmitWith(ctx, "counting", map[string]any{jobs.FromSavepointOption: damaged}, counting.Pipeline(start, end, interval, false))
	if want := "savepoint " + damaged + ": checkpoint.bin is damaged or was replaced"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("submitting from a damaged savepoint: %v; want it refused saying %q", err, want)
	}

	manifest := filepath.Join(dir, savepoint.ManifestFile)
	b, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	newer := strings.Replace(string(b), fmt.Sprintf(`"version": %d,`, savepoint.Version), fmt.Sprintf(`"version": %d,`, savepoint.Version+1), 1)
	if newer == string(b) {
		t.Fatalf("no version field in the manifest:\n%s", b)
	}
	if err := os.WriteFile(manifest, []byte(newer), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err = env.SubmitWith(ctx, "counting", map[string]any{jobs.FromSavepointOption: dir}, counting.Pipeline(start, end, interval, false))
	want := fmt.Sprintf("savepoint format beam-runner-savepoint version %d is newer than this beam-runner reads", savepoint.Version+1)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("submitting from a newer savepoint format: %v; want it refused saying %q", err, want)
	}
	if n := countJobs(t, ctx, env); n != jobsBefore {
		t.Errorf("%d jobs after the refused submissions, %d before: a refused one started", n, jobsBefore)
	}
}

func countJobs(t *testing.T, ctx context.Context, env *jobtest.Env) int {
	t.Helper()
	resp, err := env.Client.GetJobs(ctx, &jobpb.GetJobsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return len(resp.GetJobInfo())
}
