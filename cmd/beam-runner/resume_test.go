package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/beam-runner/beam-runner/testsupport/serverproc"
	"github.com/beam-runner/beam-runner/testsupport/testkit"
	"github.com/beam-runner/beam-runner/testsupport/testwait"
)

// TestKillAndResume checks that checkpoints let a job outlive the server: a
// Python streaming job on an EXTERNAL worker pool (PeriodicImpulse, an unbounded
// splittable source that checkpoints itself; fixed windows; a GroupByKey;
// a DoFn writing each window's count per key to a file) runs once
// cleanly, then again with the server killed (SIGKILL) mid-stream and
// restarted on the same port and --state_dir: the job resumes from its
// last checkpoint and ends DONE with the same per-window counts and the
// same element counter as the clean run, and the clean run's state and
// metrics still answer.
func TestKillAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server binary and Python SDK workers")
	}
	bin := buildServer(t)
	tmp := t.TempDir()
	pool, err := serverproc.StartPythonWorkerPool("python3", filepath.Join(tmp, "pool.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Stop()
	port, dir := testkit.FreePort(t), t.TempDir()
	flags := []string{"--checkpoint_interval=1s", "--serve_http=false"}
	// The first server logs its checkpoints (at debug level) to a file the
	// test reads, to kill it only after one.
	logPath := filepath.Join(tmp, "server.log")
	srv := startBinaryTo(t, createLog(t, logPath), bin, port, dir, append(flags, "--log_level=debug", "--log_kind=json")...)
	defer func() { srv.Process.Kill(); srv.Wait() }()
	endpoint := "localhost:" + strconv.Itoa(port)
	cli := jobClient(t, endpoint)

	// The clean run's stream lies in the past: it is read at once.
	now := time.Now().Unix() / windowSecs * windowSecs
	cleanOut := filepath.Join(tmp, "clean")
	clean := submitCounts(t, endpoint, pool.Addr, cleanOut, now-60)
	waitState(t, cli, clean, jobpb.JobState_DONE)

	// The killed run's stream starts once its workers are likely up, and
	// the server dies when a few windows have been written.
	out := filepath.Join(tmp, "killed")
	killed := submitCounts(t, endpoint, pool.Addr, out, time.Now().Unix()/windowSecs*windowSecs+8)
	waitFiles(t, out, 2*keys)
	// Kill only once a checkpoint has been saved since those windows were
	// written, so that the resumed job has state to resume from.
	saved := checkpointsSaved(t, logPath, killed)
	testwait.Until(t, time.Minute, "a checkpoint of job "+killed, func() bool {
		return checkpointsSaved(t, logPath, killed) > saved
	})
	if st, err := cli.GetState(context.Background(), &jobpb.GetJobStateRequest{JobId: killed}); err != nil || st.GetState() != jobpb.JobState_RUNNING {
		t.Fatalf("job %s before the kill: %v, %v; want it RUNNING", killed, st, err)
	}
	if err := srv.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	srv.Wait()
	srv = startBinary(t, bin, port, dir, flags...)
	cli = jobClient(t, endpoint)
	waitState(t, cli, killed, jobpb.JobState_DONE)

	if msgs := messages(t, cli, killed); !strings.Contains(msgs, "resumes from its last checkpoint") {
		t.Errorf("messages of the resumed job: %s; want one saying it resumed from its checkpoint", msgs)
	}
	want, got := readCounts(t, cleanOut), readCounts(t, out)
	if files := strings.Count(want, "\n"); files != streamSecs/windowSecs*keys || got != want {
		t.Errorf("per-window counts after the kill and resume:\n%s\nclean run (%d files, want %d):\n%s", got, files, streamSecs/windowSecs*keys, want)
	}
	if st, err := cli.GetState(context.Background(), &jobpb.GetJobStateRequest{JobId: clean}); err != nil || st.GetState() != jobpb.JobState_DONE {
		t.Errorf("clean job's state after the restart: %v, %v", st, err)
	}
	n, m := elementCounter(t, cli, clean), elementCounter(t, cli, killed)
	if n != streamSecs*1000/intervalMillis || m != n {
		t.Errorf("elements counted: clean run %d, killed and resumed run %d; want %d each", n, m, streamSecs*1000/intervalMillis)
	}
}

// The stream of windowed_counts.py in these tests.
const (
	streamSecs     = 12
	windowSecs     = 2
	intervalMillis = 500
	keys           = 3 // the script keys elements by their index mod 3
)

// submitCounts submits testdata/windowed_counts.py and returns its job id.
func submitCounts(t *testing.T, endpoint, pool, out string, start int64) string {
	t.Helper()
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "python3", "testdata/windowed_counts.py", "--endpoint="+endpoint, "--worker_pool="+pool,
		"--out="+out, fmt.Sprintf("--start=%d", start), fmt.Sprintf("--seconds=%d", streamSecs),
		fmt.Sprintf("--interval=%g", float64(intervalMillis)/1000), fmt.Sprintf("--window=%d", windowSecs))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	id, err := cmd.Output()
	if err != nil {
		t.Fatalf("submitting windowed_counts.py: %v\n%s", err, stderr.String())
	}
	return strings.TrimSpace(string(id))
}

// waitFiles waits until dir holds at least n count files.
// createLog creates a server's log file; a failed test shows its end.
func createLog(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		f.Close()
		if t.Failed() {
			data, _ := os.ReadFile(path)
			lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
			t.Logf("last lines of %s:\n%s", path, strings.Join(lines[max(0, len(lines)-40):], "\n"))
		}
	})
	return f
}

// checkpointsSaved counts the checkpoints of job that a server's JSON log
// reports saved.
func checkpointsSaved(t *testing.T, logPath, job string) int {
	t.Helper()
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for line := range strings.SplitSeq(string(data), "\n") {
		if strings.Contains(line, `"msg":"checkpoint saved"`) && strings.Contains(line, `"job":"`+job+`"`) {
			n++
		}
	}
	return n
}

func waitFiles(t *testing.T, dir string, n int) {
	t.Helper()
	testwait.Until(t, time.Minute, fmt.Sprintf("%d count files in %s", n, dir), func() bool {
		m, _ := filepath.Glob(filepath.Join(dir, "w*"))
		return len(m) >= n
	})
}

// readCounts lists dir's count files, one "name count" a line, sorted.
func readCounts(t *testing.T, dir string) string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "w*"))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, n := range names { // Glob sorts
		data, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %s", filepath.Base(n), data)
	}
	return b.String()
}

// elementCounter reads the job's "elements" user counter.
func elementCounter(t *testing.T, cli jobpb.JobServiceClient, id string) int64 {
	t.Helper()
	m, err := cli.GetJobMetrics(context.Background(), &jobpb.GetJobMetricsRequest{JobId: id})
	if err != nil {
		t.Fatal(err)
	}
	for _, mi := range m.GetMetrics().GetCommitted() {
		if mi.GetUrn() == "beam:metric:user:sum_int64:v1" && mi.GetLabels()["NAME"] == "elements" {
			v, n := binary.Uvarint(mi.GetPayload())
			if n <= 0 {
				t.Fatalf("job %s: counter payload %x", id, mi.GetPayload())
			}
			return int64(v)
		}
	}
	t.Fatalf("job %s has no elements counter in %v", id, m)
	return 0
}
