package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/beam-runner/beam-runner/testsupport/jobtest"
	"github.com/beam-runner/beam-runner/testsupport/testkit"
	"github.com/beam-runner/beam-runner/testsupport/testwait"
)

// slowFn's LOOPBACK worker runs in this process, so globals reach it:
// slowRunning closes when its element is in hand, releaseSlow ends it.
var (
	slowRunning, releaseSlow chan struct{}
	slowOnce                 sync.Once
)

func init() { beam.RegisterFunction(slowFn) }

// slowFn holds its job RUNNING until the test releases it (or, should the
// test never, for ten minutes).
func slowFn(x int, emit func(int)) {
	slowOnce.Do(func() { close(slowRunning) })
	testwait.ClosedErr(10*time.Minute, releaseSlow)
	emit(x)
}

// TestKillAndRestart runs the server binary with a state dir, finishes one
// job, kills the server (SIGKILL) while a second LOOPBACK job runs, and
// restarts it on the same port and dir: the finished job's state, metrics
// and messages answer, and the interrupted one is FAILED with a message
// saying its LOOPBACK workers are gone. A second server on the same dir is
// refused with a clear message.
func TestKillAndRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server binary")
	}
	slowRunning, releaseSlow, slowOnce = make(chan struct{}), make(chan struct{}), sync.Once{}
	defer close(releaseSlow)
	bin := buildServer(t)
	port, dir := testkit.FreePort(t), t.TempDir()
	srv := startBinary(t, bin, port, dir)
	endpoint := "localhost:" + strconv.Itoa(port)
	cli := jobClient(t, endpoint)

	beam.Init()
	defer setFlag(jobopts.Endpoint, endpoint)()
	// Set as a command line would, so the SDK puts it in the job's options.
	defer setFlag(jobopts.EnvironmentType, *jobopts.EnvironmentType)()
	if err := flag.Set("environment_type", "LOOPBACK"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p, s := beam.NewPipelineWithRoot()
	stats.Sum(s, beam.Create(s, 1, 2, 3))
	res, err := universal.Execute(ctx, p)
	if err != nil {
		t.Fatalf("first job: %v", err)
	}
	done := res.JobID()

	// The second job runs until the server dies: its LOOPBACK workers
	// live as long as Execute waits, so it waits on its own goroutine.
	p, s = beam.NewPipelineWithRoot()
	beam.ParDo(s, slowFn, beam.Create(s, 1))
	go universal.Execute(ctx, p)
	testwait.Closed(t, time.Minute, "the second job's DoFn to run", slowRunning)
	stuck := otherJob(cli, done)
	waitState(t, cli, stuck, jobpb.JobState_RUNNING)

	if err := srv.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	srv.Wait()
	srv = startBinary(t, bin, port, dir)
	defer srv.Process.Kill()
	cli = jobClient(t, endpoint) // serving: it holds the state dir now

	octx, ocancel := context.WithTimeout(ctx, 30*time.Second) // if not refused, it would serve
	defer ocancel()
	out, err := exec.CommandContext(octx, bin, "--job_port=0", "--state_dir="+dir).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "in use by another beam-runner server") {
		t.Errorf("second server on the same state dir: err %v, output %s; want a clear refusal", err, out)
	}

	jobs, err := cli.GetJobs(ctx, &jobpb.GetJobsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]jobpb.JobState_Enum{}
	for _, j := range jobs.GetJobInfo() {
		got[j.GetJobId()] = j.GetState()
	}
	if got[done] != jobpb.JobState_DONE || got[stuck] != jobpb.JobState_FAILED {
		t.Fatalf("GetJobs after restart = %v; want %s DONE, %s FAILED", got, done, stuck)
	}
	st, err := cli.GetState(ctx, &jobpb.GetJobStateRequest{JobId: done})
	if err != nil || st.GetState() != jobpb.JobState_DONE {
		t.Errorf("GetState(%s) = %v, %v", done, st, err)
	}
	m, err := cli.GetJobMetrics(ctx, &jobpb.GetJobMetricsRequest{JobId: done})
	if err != nil || len(m.GetMetrics().GetCommitted()) == 0 {
		t.Errorf("GetJobMetrics(%s) after restart = %v, %v; want the job's metrics", done, m, err)
	}
	msgs := messages(t, cli, stuck)
	if !strings.Contains(msgs, "LOOPBACK") || !strings.HasSuffix(msgs, "FAILED") {
		t.Errorf("messages of the interrupted job: %s; want one naming LOOPBACK, then FAILED", msgs)
	}
}

// otherJob returns a listed job that is none of known, or "".
func otherJob(cli jobpb.JobServiceClient, known ...string) string {
	jobs, _ := cli.GetJobs(context.Background(), &jobpb.GetJobsRequest{})
	for _, j := range jobs.GetJobInfo() {
		if !slices.Contains(known, j.GetJobId()) {
			return j.GetJobId()
		}
	}
	return ""
}

// buildServer builds this command's binary into a temporary directory.
func buildServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "beam-runner")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func startBinary(t *testing.T, bin string, port int, dir string, flags ...string) *exec.Cmd {
	t.Helper()
	return startBinaryTo(t, os.Stderr, bin, port, dir, flags...)
}

// startBinaryTo is startBinary with the server's output going to out.
func startBinaryTo(t *testing.T, out *os.File, bin string, port int, dir string, flags ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--job_port=" + strconv.Itoa(port), "--state_dir=" + dir, "--log_level=warn"}, flags...)...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// jobClient dials the job service and waits until it answers.
func jobClient(t *testing.T, endpoint string) jobpb.JobServiceClient {
	t.Helper()
	cc, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	cli := jobpb.NewJobServiceClient(cc)
	testwait.NoErr(t, time.Minute, "the job service at "+endpoint+" to answer", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := cli.GetJobs(ctx, &jobpb.GetJobsRequest{})
		return err
	})
	return cli
}

func waitState(t *testing.T, cli jobpb.JobServiceClient, id string, want jobpb.JobState_Enum) {
	t.Helper()
	testwait.NoErr(t, time.Minute, "job "+id+" to reach "+want.String(), func() error {
		st, err := cli.GetState(context.Background(), &jobpb.GetJobStateRequest{JobId: id})
		if err == nil && st.GetState() != want {
			err = fmt.Errorf("job %s is %v", id, st.GetState())
		}
		return err
	})
}

// messages reads a job's whole message stream as one string.
func messages(t *testing.T, cli jobpb.JobServiceClient, id string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	msgs, err := jobtest.Messages(ctx, cli, id)
	if err != nil {
		t.Fatalf("message stream: %v", err)
	}
	return msgs
}

func setFlag(f *string, v string) func() {
	old := *f
	*f = v
	return func() { *f = old }
}
