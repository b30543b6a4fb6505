package execute

import (
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"

	"github.com/beam-runner/beam-runner/testsupport/testwait"
)

func init() {
	beam.RegisterFunction(flaky)
	beam.RegisterFunction(slowPass)
	beam.RegisterFunction(failAfterSlow)
}

// flakyFailures is how many more times flaky fails on "x"; the harness runs
// in this process, so a global reaches it. flakyVaries makes each
// failure's message differ, as a flaky fault's might.
var (
	flakyFailures atomic.Int32
	flakyVaries   atomic.Bool
)

// flaky passes elements through but fails on "x" while flakyFailures
// lasts, after having emitted what came before it in the bundle: a failed
// attempt's partial output must not be committed.
func flaky(s string, emit func(string)) error {
	if s != "x" {
		emit(s)
		return nil
	}
	if n := flakyFailures.Add(-1); n >= 0 {
		if flakyVaries.Load() {
			return fmt.Errorf("flaky failure on %q (%d to go)", s, n)
		}
		return fmt.Errorf("flaky failure on %q", s)
	}
	emit(s)
	return nil
}

func flakyPipeline() *beam.Pipeline {
	p, s := beam.NewPipelineWithRoot()
	out := beam.ParDo(s, flaky, beam.Create(s, "a", "b", "x", "c"))
	passert.Equals(s, out, "a", "b", "x", "c")
	return p
}

// runFlaky runs flakyPipeline with failures failures to come, on the
// workers given, and returns the job's error and how many times the
// DoFn failed.
func runFlaky(t *testing.T, failures int32, varies bool, attempts int, opts map[string]any) (error, int32) {
	t.Helper()
	flakyFailures.Store(failures)
	flakyVaries.Store(varies)
	err := runPipelineWith(t, flakyPipeline(), Options{MaxBundleAttempts: attempts}, opts)
	return err, failures - max(0, flakyFailures.Load())
}

func workersOption(n string) map[string]any {
	return map[string]any{"beam:option:workers_per_environment:v1": n}
}

// A bundle whose user code fails runs again on another worker, and only
// the attempt that succeeds is committed: the output has no duplicates
// from failed ones. Failures that differ may each run again.
func TestUserFailureRetried(t *testing.T) {
	if err, ran := runFlaky(t, 2, true, 3, workersOption("2")); err != nil || ran != 2 {
		t.Fatalf("2 different failures, 3 attempts, 2 workers: job error %v, %d failures; want success after 2", err, ran)
	}
}

// The retry policy: user code that fails the same way twice, or with no
// other worker to run on (one worker, or a LOOPBACK job), fails the job;
// different failures run again until the attempts run out.
func TestUserFailureNotRetried(t *testing.T) {
	loopback := workersOption("2")
	loopback["beam:option:environment_type:v1"] = "LOOPBACK"
	for _, tc := range []struct {
		name     string
		varies   bool
		attempts int
		opts     map[string]any
		runs     int32
		want     []string
	}{
		{"same failure twice", false, 4, workersOption("2"), 2, []string{"attempt 2 of 4", "not retried: user code failed the same way twice"}},
		{"one worker", false, 4, workersOption("1"), 1, []string{"attempt 1 of 4", "not retried: user code failed and the job has no other worker"}},
		{"LOOPBACK", false, 4, loopback, 1, []string{"attempt 1 of 4", "no other worker"}},
		{"attempts run out", true, 3, workersOption("2"), 3, []string{"attempt 3 of 3", "giving up after 3 attempt(s)"}},
	} {
		err, ran := runFlaky(t, 5, tc.varies, tc.attempts, tc.opts)
		if err == nil {
			t.Fatalf("%s: the job succeeded", tc.name)
		}
		if ran != tc.runs {
			t.Errorf("%s: the DoFn failed %d times, want %d", tc.name, ran, tc.runs)
		}
		for _, want := range append(tc.want, `flaky failure on "x"`) {
			if !strings.Contains(strings.SplitN(err.Error(), "\n", 2)[0], want) {
				t.Errorf("%s: error's first line lacks %q: %v", tc.name, want, err)
			}
		}
	}
}

// TestJobErrorHeadline: a job failed by user code says in its first line
// what failed and where (the SDK's error, then stage, transform, bundle
// and attempt); the SDK's whole message follows untouched, with the
// runner's words after it rather than inside it.
func TestJobErrorHeadline(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	beam.ParDo(s, failOn, beam.Create(s, "ok", "boom"))
	p2, s2 := beam.NewPipelineWithRoot()
	passert.Equals(s2, beam.Create(s2, "a", "b"), "a", "c")
	for _, tc := range []struct {
		name      string
		p         *beam.Pipeline
		head      string
		transform string
		lastLine  string // the SDK message's last line, whole
	}{
		{"DoFn error", p, `user DoFn failed on "boom" (stage `, `transform "execute.failOn"`, `user DoFn failed on "boom"`},
		{"passert failure", p2, "actual PCollection does not match expected values (stage ", `transform "passert.Equals/passert.failIfBadEntries"`, "c"},
	} {
		err := runPipelineWith(t, tc.p, Options{MaxBundleAttempts: 1}, map[string]any{})
		if err == nil {
			t.Fatalf("%s: the job succeeded", tc.name)
		}
		lines := strings.Split(err.Error(), "\n")
		first := lines[0]
		if !strings.HasPrefix(first, tc.head) || !strings.Contains(first, tc.transform) || !strings.Contains(first, "bundle ") ||
			!strings.HasSuffix(first, "attempt 1 of 1); giving up after 1 attempt(s)") {
			t.Errorf("%s: first line %q, want it to start %q and name the transform (%s), bundle and attempt", tc.name, first, tc.head, tc.transform)
		}
		if len(lines) < 2 || !strings.HasPrefix(lines[1], "user code failed in worker ") {
			t.Errorf("%s: second line %q, want the SDK's message to follow", tc.name, lines[1:2])
		}
		// Clients and Beam's tests read the SDK's message at the end.
		if last := lines[len(lines)-1]; last != tc.lastLine {
			t.Errorf("%s: last line %q, want the SDK message's last, %q; whole:\n%v", tc.name, last, tc.lastLine, err)
		}
	}
}

// slowEnded counts the elements slowPass finished; the harness runs in this
// process, so globals reach it. slowStarted closes when slowPass begins,
// abandoning when the runner says it lets running bundles end.
var (
	slowEnded   atomic.Int32
	slowStarted chan struct{}
	abandoning  chan struct{}
)

// slowPass passes its element on once the runner is letting running
// bundles end: a bundle still running when another one fails the job.
func slowPass(s string) (string, error) {
	close(slowStarted)
	if err := testwait.ClosedErr(time.Minute, abandoning); err != nil {
		return "", fmt.Errorf("the runner did not begin abandoning: %w", err)
	}
	slowEnded.Add(1)
	return s, nil
}

// failAfterSlow fails on its element once slowPass runs, so the failure
// finds slowPass's bundle running.
func failAfterSlow(s string) (string, error) {
	if err := testwait.ClosedErr(time.Minute, slowStarted); err != nil {
		return "", fmt.Errorf("slowPass did not start: %w", err)
	}
	return "", fmt.Errorf("user DoFn failed on %q", s)
}

// TestFailedJobLetsRunningBundlesEnd: when user code fails the job, a
// bundle of another stage still running on another worker ends before the
// job stops its workers (the Fn API cannot cancel a bundle, and the Go
// SDK's harness races on its data stream when stopped mid-bundle), as long
// as it ends within the grace.
func TestFailedJobLetsRunningBundlesEnd(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	beam.ParDo(s, failAfterSlow, beam.Create(s, "boom"))
	beam.ParDo(s, slowPass, beam.Create(s, "slow"))
	slowEnded.Store(0)
	slowStarted, abandoning = make(chan struct{}), make(chan struct{})
	log := slog.New(slog.NewTextHandler(signalOn(abandoning, `msg="letting running bundles end"`), nil))
	err := runPipelineWith(t, p, Options{MaxBundleAttempts: 1, Logger: log}, workersOption("2"))
	if err == nil || !strings.Contains(err.Error(), `user DoFn failed on "boom"`) {
		t.Fatalf("job error %v; want the user failure", err)
	}
	if n := slowEnded.Load(); n != 1 {
		t.Errorf("the slow bundle ended %d times before the job did; want 1", n)
	}
}
