package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/beam-runner/beam-runner/testsupport/testwait"
	"github.com/beam-runner/beam-runner/validates/wordcount"
)

// TestBatchResumesAfterKills checks that a batch job outlives the server:
// Beam's Python wordcount, on the SDK's default environment (which the
// server runs as local worker processes, so they do not die with the
// client), is killed with the server (SIGKILL) at about half and nine
// tenths of a clean run's time, each time after a checkpoint. Each
// restarted server resumes it from its checkpoint, and it ends DONE with
// the DirectRunner's counts. BATCH_RESUME_MB sets the input's size
// (docs/durability.md has the figures at 150 MB).
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
	port, dir := freePort(t), t.TempDir()
	endpoint := "localhost:" + strconv.Itoa(port)
	server := &killable{t: t, bin: bin, port: port, dir: dir, logDir: tmp}
	server.start()
	defer server.stop()
	submit := []string{"--runner=PortableRunner", "--job_endpoint=" + endpoint}

	// The kills come at fractions of a clean run's time, so the job must
	// still run then: under `go test ./...` other packages' tests load
	// the machine for a while, and one clean run slowed by them (13.7 s
	// against 10 s) put the second kill after the killed run had ended.
	// The faster of two clean runs is the reference.
	var clean time.Duration
	var cleanIDs []string
	cli := jobClient(t, endpoint)
	for i := range 2 {
		start := time.Now()
		requireCounts(t, "clean run", want, wordcountOn(t, input, filepath.Join(tmp, "clean"+strconv.Itoa(i)), submit...))
		if took := time.Since(start); i == 0 || took < clean {
			clean = took
		}
		cleanIDs = append(cleanIDs, otherJob(cli, cleanIDs...))
	}

	out := filepath.Join(tmp, "killed")
	client := startWordcount(t, input, out, submit...)
	start := time.Now()
	var id string
	testwait.Until(t, time.Minute, "the killed run's job", func() bool { id = otherJob(cli, cleanIDs...); return id != "" })
	for _, at := range []float64{0.5, 0.9} {
		time.Sleep(time.Until(start.Add(time.Duration(at * float64(clean)))))
		server.killAfterCheckpoint(id)
		t.Logf("server killed %v into the run (%.0f%% of the clean run's %v)", time.Since(start).Round(time.Millisecond), 100*at, clean.Round(time.Millisecond))
		server.start()
		cli = jobClient(t, endpoint)
	}
	waitDone(t, cli, id, 10*time.Minute)
	client.Wait() // it lost the server at the first kill
	t.Logf("killed twice and resumed: %v; clean run: %v; ratio %.2f", time.Since(start).Round(time.Millisecond),
		clean.Round(time.Millisecond), time.Since(start).Seconds()/clean.Seconds())
	requireCounts(t, "killed and resumed run", want, readWordcount(t, out))
	msgs := messages(t, cli, id)
	if n := strings.Count(msgs, "job resumed from its checkpoint"); n != 2 {
		t.Errorf("the job's messages say %d times where it resumed, want 2:\n%s", n, msgs)
	}
}

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
		"--checkpoint_interval=1s", "--serve_http=false", "--log_level=debug", "--log_kind=json")
}

// killAfterCheckpoint SIGKILLs the server once it has saved a checkpoint
// of job, so that the restarted one has something to resume from; the job
// must still be running.
func (k *killable) killAfterCheckpoint(job string) {
	testwait.Until(k.t, time.Minute, "a checkpoint of job "+job, func() bool {
		return checkpointsSaved(k.t, k.log, job) > 0
	})
	cli := jobClient(k.t, "localhost:"+strconv.Itoa(k.port))
	if st, err := cli.GetState(context.Background(), &jobpb.GetJobStateRequest{JobId: job}); err != nil || st.GetState() != jobpb.JobState_RUNNING {
		k.t.Fatalf("job %s before the kill: %v, %v; want it RUNNING", job, st, err)
	}
	k.stop()
}

func (k *killable) stop() {
	k.cmd.Process.Signal(syscall.SIGKILL)
	k.cmd.Wait()
}

// waitDone waits until job ends DONE; any other end fails the test.
func waitDone(t *testing.T, cli jobpb.JobServiceClient, id string, limit time.Duration) {
	t.Helper()
	testwait.Until(t, limit, "job "+id+" DONE", func() bool {
		st, err := cli.GetState(context.Background(), &jobpb.GetJobStateRequest{JobId: id})
		if err != nil {
			t.Fatal(err)
		}
		switch st.GetState() {
		case jobpb.JobState_FAILED, jobpb.JobState_CANCELLED, jobpb.JobState_STOPPED:
			t.Fatalf("job %s ended %v:\n%s", id, st.GetState(), messages(t, cli, id))
		}
		return st.GetState() == jobpb.JobState_DONE
	})
}

// startWordcount starts Beam's Python wordcount example on input, writing
// under outDir.
func startWordcount(t *testing.T, input, outDir string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("python3", append([]string{"-m", "apache_beam.examples.wordcount",
		"--input=" + input, "--output=" + filepath.Join(outDir, "out")}, args...)...)
	logf, err := os.Create(outDir + ".client.log")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logf.Close() })
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// wordcountOn runs the wordcount to its end and reads its counts.
func wordcountOn(t *testing.T, input, outDir string, args ...string) wordcount.Counts {
	t.Helper()
	if err := startWordcount(t, input, outDir, args...).Wait(); err != nil {
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
