package main

import (
	"context"
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
	"github.com/beam-runner/beam-runner/testsupport/testkit"
	"github.com/beam-runner/beam-runner/testsupport/testwait"
	"github.com/beam-runner/beam-runner/validates/wordcount"
)

// TestBatchResumesAfterKills checks that a batch job outlives the server:
// Beam's Python wordcount, on the SDK's default environment (which the
// server runs as local worker processes, so they do not die with the
// client), is killed with the server (SIGKILL) twice, each time once the
// running server has saved killAfter checkpoints of it. Each restarted
// server resumes it from its checkpoint, and it ends DONE with the
// DirectRunner's counts, as a clean run does. BATCH_RESUME_MB sets the
// input's size (docs/durability.md has the figures at 150 MB).
//
// The kills follow the job's own progress, not a clock: they once came
// at fractions of a clean run's time, which a loaded machine stretched
// past the killed run's end. Every wait is bounded (the Python clients'
// too, which once had no limit but go test's) and says on expiry what the
// processes were doing.
func TestBatchResumesAfterKills(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server binary, Python SDK workers and the DirectRunner")
	}
	mb := 24
	if v, err := strconv.Atoi(os.Getenv("BATCH_RESUME_MB")); err == nil && v > 0 {
		mb = v
	}
	tmp := t.TempDir()
	input, _, err := wordcount.EnsureFile(tmp, int64(mb)<<20, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := wordcountOn(t, input, filepath.Join(tmp, "direct"), "--runner=DirectRunner")
	bin := buildServer(t)
	port, dir := testkit.FreePort(t), t.TempDir()
	endpoint := "localhost:" + strconv.Itoa(port)
	server := &killable{t: t, bin: bin, port: port, dir: dir, logDir: tmp}
	server.start()
	defer server.stop()
	submit := []string{"--runner=PortableRunner", "--job_endpoint=" + endpoint}

	cli := jobClient(t, endpoint)
	cleanOut := filepath.Join(tmp, "clean")
	cleanClient := startWordcount(t, input, cleanOut, submit...)
	var cleanID string
	testwait.Until(t, time.Minute, "the clean run's job", func() bool { cleanID = otherJob(cli); return cleanID != "" })
	waitDone(t, cli, cleanID, server, 10*time.Minute)
	endClient(t, cleanClient, time.Minute, "the clean run's client", cleanOut+".client.log")
	requireCounts(t, "clean run", want, readWordcount(t, cleanOut))

	out := filepath.Join(tmp, "killed")
	client := startWordcount(t, input, out, submit...)
	start := time.Now()
	var id string
	testwait.Until(t, time.Minute, "the killed run's job", func() bool { id = otherJob(cli, cleanID); return id != "" })
	for range 2 {
		server.killAfterCheckpoint(id, killAfter)
		t.Logf("server killed %v into the run, after %d checkpoints", time.Since(start).Round(time.Millisecond), killAfter)
		server.start()
		cli = jobClient(t, endpoint)
	}
	waitDone(t, cli, id, server, 5*time.Minute)
	endClient(t, client, time.Minute, "the killed run's client", out+".client.log") // it lost the server at the first kill
	t.Logf("killed twice and resumed: %v", time.Since(start).Round(time.Millisecond))
	requireCounts(t, "killed and resumed run", want, readWordcount(t, out))
	msgs := messages(t, cli, id)
	if n := strings.Count(msgs, "job resumed from its checkpoint"); n != 2 {
		t.Errorf("the job's messages say %d times where it resumed, want 2:\n%s", n, msgs)
	}
}

// killAfter is how many checkpoints of the job a server saves before the
// test kills it: one, so that the restarted server has something to
// resume from and as much of the run as possible is left for the next
// server. Checkpoints come at most every 250 ms and no more often than
// ten times what the last one took, so a second one could come after a
// fast CI machine had finished the resumed run (it did, at 1 s).
const killAfter = 1

// killable is a server binary the test kills and starts again on the same
// port and --state_dir, each start logging to its own file.
type killable struct {
	t          *testing.T
	bin        string
	port       int
	dir        string
	logDir     string
	cmd        *exec.Cmd
	log        string
	generation int
}

func (k *killable) start() {
	k.generation++
	k.log = filepath.Join(k.logDir, "server-"+strconv.Itoa(k.generation)+".log")
	k.cmd = startBinaryTo(k.t, createLog(k.t, k.log), k.bin, k.port, k.dir,
		"--checkpoint_interval=250ms", "--serve_http=false", "--log_level=debug", "--log_kind=json")
}

// killAfterCheckpoint SIGKILLs the server once it has saved n checkpoints
// of job, so that the restarted one has something to resume from; the job
// must still be running.
func (k *killable) killAfterCheckpoint(job string, n int) {
	k.t.Helper()
	if err := testwait.For(context.Background(), testwait.Limit(k.t, 2*time.Minute), func() (bool, error) {
		return checkpointsSaved(k.t, k.log, job) >= n, nil
	}); err != nil {
		k.t.Fatalf("waiting for %d checkpoints of job %s; server log %s ends:\n%s\n%v", n, job, k.log, testkit.TailFile(k.log, 30), err)
	}
	cli := jobClient(k.t, "localhost:"+strconv.Itoa(k.port))
	if st, err := cli.GetState(context.Background(), &jobpb.GetJobStateRequest{JobId: job}); err != nil || st.GetState() != jobpb.JobState_RUNNING {
		k.t.Fatalf("job %s before the kill: %v, %v; want it RUNNING", job, st, err)
	}
	k.stop()
}

func (k *killable) stop() {
	k.cmd.Process.Signal(syscall.SIGKILL)
	waitProcess(k.t, k.cmd, time.Minute, "the killed server", k.log)
}

// waitDone waits until job ends DONE; any other end fails the test, and
// so does its limit, with the tail of the server's log.
func waitDone(t *testing.T, cli jobpb.JobServiceClient, id string, server *killable, limit time.Duration) {
	t.Helper()
	err := testwait.For(context.Background(), testwait.Limit(t, limit), func() (bool, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		st, err := cli.GetState(ctx, &jobpb.GetJobStateRequest{JobId: id})
		if err != nil {
			return false, err
		}
		switch st.GetState() {
		case jobpb.JobState_FAILED, jobpb.JobState_CANCELLED, jobpb.JobState_STOPPED:
			return false, fmt.Errorf("job %s ended %v:\n%s", id, st.GetState(), messages(t, cli, id))
		}
		return st.GetState() == jobpb.JobState_DONE, nil
	})
	if err != nil {
		t.Fatalf("waiting for job %s DONE: server log %s ends:\n%s\n%v", id, server.log, testkit.TailFile(server.log, 40), err)
	}
}

// waitProcess waits for cmd to exit, at most limit; past it, it kills cmd
// and fails with the tail of its log and this process's goroutines.
func waitProcess(t *testing.T, cmd *exec.Cmd, limit time.Duration, what, logPath string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	err, werr := testwait.RecvErr(context.Background(), testwait.Limit(t, limit), done)
	if werr != nil {
		cmd.Process.Kill()
		<-done
		t.Fatalf("%s (pid %d) still runs after %v; %s ends:\n%s\n%v", what, cmd.Process.Pid, limit, logPath, testkit.TailFile(logPath, 40), werr)
	}
	return err
}

// endClient lets a portable client whose job has ended DONE exit, for at
// most limit; past it, it kills the client and says so, without failing:
// the job's result is the server's. (grpcio's finalizer hang at exit,
// once seen here as a stall after "Job state changed to DONE", is what
// testkit.PythonClient's os._exit avoids; this stays the guard.)
func endClient(t *testing.T, cmd *exec.Cmd, limit time.Duration, what, logPath string) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	if _, werr := testwait.RecvErr(context.Background(), testwait.Limit(t, limit), done); werr != nil {
		// SIGABRT makes the client's faulthandler write its threads' stacks.
		cmd.Process.Signal(syscall.SIGABRT)
		if _, err := testwait.RecvErr(context.Background(), 30*time.Second, done); err != nil {
			cmd.Process.Kill()
			<-done
		}
		t.Logf("%s (pid %d) still ran %v after its job ended DONE: aborted; %s ends:\n%s", what, cmd.Process.Pid, limit, logPath, testkit.TailFile(logPath, 60))
	}
}

// startWordcount starts Beam's Python wordcount example on input, writing
// under outDir.
func startWordcount(t *testing.T, input, outDir string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := testkit.PythonClient(context.Background(), t, "", append([]string{"-m", "apache_beam.examples.wordcount",
		"--input=" + input, "--output=" + filepath.Join(outDir, "out")}, args...)...)
	logf, err := os.Create(outDir + ".client.log")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logf.Close() })
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), "PYTHONFAULTHANDLER=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// wordcountOn runs the wordcount to its end and reads its counts.
func wordcountOn(t *testing.T, input, outDir string, args ...string) wordcount.Counts {
	t.Helper()
	// A clean run of the 24 MB input takes seconds to a minute.
	cmd := startWordcount(t, input, outDir, args...)
	if err := waitProcess(t, cmd, 10*time.Minute, "wordcount "+strings.Join(args, " "), outDir+".client.log"); err != nil {
		log, _ := os.ReadFile(outDir + ".client.log")
		t.Fatalf("wordcount %v: %v\n%s", args, err, log)
	}
	return readWordcount(t, outDir)
}

func readWordcount(t *testing.T, outDir string) wordcount.Counts {
	t.Helper()
	c, err := wordcount.ReadOutput(filepath.Join(outDir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func requireCounts(t *testing.T, what string, want, got wordcount.Counts) {
	t.Helper()
	if d := wordcount.Diff(want, got, 10); len(d) > 0 {
		t.Fatalf("%s: counts differ from the DirectRunner's (%d words, %d in all there; %d words, %d here):\n%s",
			what, len(want), want.Total(), len(got), got.Total(), strings.Join(d, "\n"))
	}
}
