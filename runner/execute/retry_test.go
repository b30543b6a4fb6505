package execute

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"google.golang.org/protobuf/types/known/structpb"
)

// LOOPBACK is recognised in the options both SDKs send: Go's wrapped
// go_options (built here by the Go SDK's own type) and Python's flat keys.
func TestLoopbackOptions(t *testing.T) {
	goOpts := func(env string) *structpb.Struct {
		b, err := json.Marshal(runtime.RawOptionsWrapper{Options: runtime.RawOptions{Options: map[string]string{"environment_type": env}}})
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		json.Unmarshal(b, &m)
		s, err := structpb.NewStruct(m)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	pyOpts := func(env string) *structpb.Struct {
		s, _ := structpb.NewStruct(map[string]any{"beam:option:environment_type:v1": env})
		return s
	}
	for _, tc := range []struct {
		name string
		opts *structpb.Struct
		want bool
	}{
		{"go loopback", goOpts("LOOPBACK"), true},
		{"go external", goOpts("EXTERNAL"), false},
		{"python loopback", pyOpts("LOOPBACK"), true},
		{"python process", pyOpts("PROCESS"), false},
		{"none", nil, false},
	} {
		if got := loopbackOptions(tc.opts); got != tc.want {
			t.Errorf("%s: loopback = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func init() { beam.RegisterFunction(flaky) }

// flakyFailures is how many more times flaky fails on "x"; the harness runs
// in this process (LOOPBACK), so a global reaches it.
var flakyFailures atomic.Int32

// flaky passes elements through but fails on "x" while flakyFailures
// lasts, after having emitted what came before it in the bundle: a failed
// attempt's partial output must not be committed.
func flaky(s string, emit func(string)) error {
	if s == "x" && flakyFailures.Add(-1) >= 0 {
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

// A bundle whose user code fails runs again, and only the attempt that
// succeeds is committed: the output has no duplicates from failed ones.
func TestUserFailureRetried(t *testing.T) {
	flakyFailures.Store(2)
	if err := runPipelineWith(t, flakyPipeline(), Options{MaxBundleAttempts: 3}, map[string]any{}); err != nil {
		t.Fatalf("job failed with 2 failures and 3 attempts: %v", err)
	}
	if n := flakyFailures.Load(); n >= 0 {
		t.Fatalf("the DoFn failed %d times, want 2", 2-n)
	}
}

// When attempts run out the job fails with the last cause and the count.
func TestUserFailureAttemptsRunOut(t *testing.T) {
	flakyFailures.Store(5)
	err := runPipelineWith(t, flakyPipeline(), Options{MaxBundleAttempts: 2}, map[string]any{})
	if err == nil {
		t.Fatal("job succeeded with 5 failures and 2 attempts")
	}
	for _, want := range []string{`flaky failure on "x"`, "attempt 2 of 2", "giving up after 2 attempt(s)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
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
		if !slices.Contains(lines, tc.lastLine) {
			t.Errorf("%s: no line is the SDK message's last, %q, whole:\n%v", tc.name, tc.lastLine, err)
		}
	}
}
