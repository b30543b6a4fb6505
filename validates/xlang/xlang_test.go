//go:build xlang

package xlang

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/beam-runner/beam-runner/testsupport/testkit"
)

// python is the interpreter with apache-beam: $PYTHON, as setup uses it.
var python = func() string {
	if p := os.Getenv("PYTHON"); p != "" {
		return p
	}
	return "python3"
}()

// modes are the two ways the expansion service is started: what
// environment it hands out for its Java transforms.
var modes = []struct {
	name string
	opts []string
}{
	// anyof(Java's SDK image, the service's own worker pool): the runner
	// prefers the worker pool (EXTERNAL), which answers.
	{name: "anyof-external", opts: []string{"--alsoStartLoopbackWorker"}},
	// Java's SDK image alone: the runner runs it as local JVMs.
	{name: "java-image"},
}

// TestJavaTransforms runs the cross-language pipelines against one job
// server and one broker, for each way of starting the expansion service.
func TestJavaTransforms(t *testing.T) {
	t.Parallel() // beside TestKafkaExactlyOnce: both mostly wait on JVMs
	srv := startRunner(t)
	boot := startBroker(t, "kafka")
	t.Cleanup(func() {
		if kafkaTest.bin != "" {
			os.RemoveAll(filepath.Dir(kafkaTest.bin))
		}
	})
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			exp := startExpansion(t, m.name, m.opts...)
			t.Run("PythonGenerateSequence", func(t *testing.T) { pythonGenerateSequence(t, srv, exp) })
			t.Run("PythonKafkaWindowedCounts", func(t *testing.T) { pythonKafkaCounts(t, srv, exp, boot, m.name) })
			t.Run("GoKafkaIO", func(t *testing.T) { goKafkaIO(t, srv, exp, boot) })
		})
	}
}

// pythonGenerateSequence: GenerateSequence(1, 11) squared, asserted by
// the pipeline itself (assert_that fails the job otherwise).
func pythonGenerateSequence(t *testing.T, srv runnerServer, exp string) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := testkit.PythonClient(ctx, t, python, "generate_sequence.py", exp, "1", "11",
		"--runner=PortableRunner", "--job_endpoint="+srv.endpoint, "--environment_type=LOOPBACK")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("generate_sequence.py: %v\n%s", err, tailString(string(out), 40))
	}
}

const windowMs = 10_000

// pythonKafkaCounts fills a topic, runs the streaming count pipeline,
// reads the counts back with a real consumer, then drains the job.
func pythonKafkaCounts(t *testing.T, srv runnerServer, exp, boot, mode string) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	in, out := "counts-in-"+mode, "counts-out-"+mode
	// Ten minutes back, aligned: the create-time watermark passes every
	// window once the topic is read.
	base := (time.Now().Add(-10*time.Minute).UnixMilli() / windowMs) * windowMs
	recs := countRecords(300, 3, base, windowMs)
	if _, err := kafkaClient(t, ctx, producerInput(recs), "produce", boot, in); err != nil {
		t.Fatal(err)
	}
	job := startCountJob(t, ctx, srv, exp, boot, in, out)
	want := expectedCounts(recs, windowMs)
	got, err := kafkaClient(t, ctx, "", "consume", boot, out, fmt.Sprint(len(want)), "180000")
	if err != nil {
		t.Fatal(err)
	}
	if d := diffLines(consumedLines(got), want); d != "" {
		t.Errorf("counts read back from %s: %s", out, d)
	}
	drain := exec.CommandContext(ctx, srv.bin, "drain", "--endpoint="+srv.endpoint, "--wait", "--timeout=2m", job.id)
	if b, err := drain.CombinedOutput(); err != nil {
		t.Fatalf("beam-runner drain %s: %v\n%s", job.id, err, b)
	}
	if state := job.wait(t); state != "DRAINED" {
		t.Errorf("the job ended %s after the drain, want DRAINED", state)
	}
}

// countJob is a Python pipeline script (kafka_counts.py,
// kafka_backpressure.py) running in the background.
type countJob struct {
	id    string
	cmd   *exec.Cmd
	lines chan string // the rest of its output
	log   string
}

func startCountJob(t *testing.T, ctx context.Context, srv runnerServer, exp, boot, in, out string) *countJob {
	t.Helper()
	return startPyJob(t, ctx, "kafka_counts-"+in, "kafka_counts.py", exp, boot, in, out, fmt.Sprint(windowMs/1000),
		"--runner=PortableRunner", "--job_endpoint="+srv.endpoint, "--environment_type=LOOPBACK")
}

// startPyJob runs a Python pipeline script that prints "JOB <id>" once its
// job runs, its stderr in NAME.log, and returns once it has printed that.
func startPyJob(t *testing.T, ctx context.Context, name, script string, args ...string) *countJob {
	t.Helper()
	cmd := testkit.PythonClient(ctx, t, python, append([]string{script}, args...)...)
	j := &countJob{cmd: cmd, lines: make(chan string, 1000), log: filepath.Join(logDir(t), name+".log")}
	logf, err := os.Create(j.log)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = logf
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait(); logf.Close() })
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			j.lines <- sc.Text()
		}
		close(j.lines)
	}()
	for line := range j.lines {
		if id, ok := strings.CutPrefix(line, "JOB "); ok {
			j.id = id
			return j
		}
	}
	t.Fatalf("%s ended before its job ran; log %s ends:\n%s", script, j.log, testkit.TailFile(j.log, 40))
	return nil
}

// wait returns the state the script printed once its job ended.
func (j *countJob) wait(t *testing.T) string {
	state := ""
	for line := range j.lines {
		if s, ok := strings.CutPrefix(line, "STATE "); ok {
			state = s
		}
	}
	if err := j.cmd.Wait(); err != nil {
		t.Errorf("%s: %v; log %s ends:\n%s", j.cmd.Args[1], err, j.log, testkit.TailFile(j.log, 40))
	}
	return state
}

const kafkaTestPkg = "github.com/apache/beam/sdks/v2/go/test/integration/io/xlang/kafka"

// goKafkaIO runs Beam's own Go TestKafkaIO_BasicReadWrite, unmodified:
// kafkaio.Write of 1000 ints, then kafkaio.Read of them with passert.
func goKafkaIO(t *testing.T, srv runnerServer, exp, boot string) {
	bin := kafkaTestBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-test.run=^TestKafkaIO_BasicReadWrite$", "-test.v",
		"--runner=universal", "--endpoint="+srv.endpoint, "--environment_type=LOOPBACK",
		"--expansion_addr=io:"+exp, "--bootstrap_servers="+boot)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestKafkaIO_BasicReadWrite") {
		t.Fatalf("TestKafkaIO_BasicReadWrite: %v\n%s", err, tailString(grepOut(string(out), "Downloaded"), 40))
	}
}

// grepOut drops the lines containing s.
func grepOut(out, s string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		if !strings.Contains(l, s) {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

var kafkaTest struct {
	once sync.Once
	bin  string
	err  error
}

// kafkaTestBinary builds Beam's Go Kafka test package once per run.
func kafkaTestBinary(t *testing.T) string {
	kafkaTest.once.Do(func() {
		dir, err := os.MkdirTemp("", "xlang-kafka-test-")
		if err != nil {
			kafkaTest.err = err
			return
		}
		kafkaTest.bin = filepath.Join(dir, "kafka.test")
		build := exec.Command("go", "test", "-c", "-o", kafkaTest.bin, kafkaTestPkg)
		build.Dir = repoRoot(t)
		if out, err := build.CombinedOutput(); err != nil {
			kafkaTest.err = fmt.Errorf("go test -c %s: %v\n%s", kafkaTestPkg, err, out)
		}
	})
	if kafkaTest.err != nil {
		t.Fatal(kafkaTest.err)
	}
	return kafkaTest.bin
}
