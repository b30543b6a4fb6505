package bench

import (
	"strings"
	"testing"
	"time"
)

func TestParseRuntime(t *testing.T) {
	cases := []struct {
		out  string
		want time.Duration
		ok   bool
	}{
		{`time=2026-11-29T17:05:19.973Z level=INFO msg="runtime 1.886320607s"`, 1886320607 * time.Nanosecond, true},
		{`2026/11/29 17:05:19 runtime 28.229596ms`, 28229596 * time.Nanosecond, true},
		{`level=INFO msg="runtime 1m2.5s"`, 62500 * time.Millisecond, true},
		{`level=INFO msg="No metrics returned."`, 0, false},
		{`msg="runtime_seconds are fine"`, 0, false},
	}
	for _, c := range cases {
		got, ok := ParseRuntime(c.out)
		if got != c.want || ok != c.ok {
			t.Errorf("ParseRuntime(%q) = %v, %v; want %v, %v", c.out, got, ok, c.want, c.ok)
		}
	}
}

// A real failure from the GroupByKey load test, shortened.
const gbkFailure = `time=2026-11-29T17:05:31.925Z level=INFO msg="Submitted job: go-job-1"
panic: Failed to execute job: job go-job-1 failed:
	stage s4 (main.ungroupAndReiterateFn and 1 more): bundle b-6 failed in worker "w0": process bundle failed for instruction b-6 using plan s4 : while executing Process for Plan[s4]:
	6: ParDo[main.ungroupAndReiterateFn] Out:[5] Sig: func([]uint8, func(*[]uint8) bool) ([]uint8, []uint8), SideInputs: []
	5: PCollection[n6] Out:[4]
		caused by:
	source failed processing data
		caused by:
	received stream with marker size of -916455716

goroutine 1 [running]:
github.com/apache/beam/sdks/v2/go/pkg/beam/log.Fatalf(...)
`

func TestErrorExcerpt(t *testing.T) {
	got := ErrorExcerpt(gbkFailure)
	for _, want := range []string{"panic: Failed to execute job", "stage s4", "marker size of -916455716"} {
		if !strings.Contains(got, want) {
			t.Errorf("excerpt lacks %q: %s", want, got)
		}
	}
	for _, bad := range []string{"PCollection[n6]", "goroutine", "Submitted job"} {
		if strings.Contains(got, bad) {
			t.Errorf("excerpt has %q: %s", bad, got)
		}
	}
}

func TestErrorExcerptWithoutMarkerTakesTail(t *testing.T) {
	out := strings.Repeat("noise\n", 20) + "exec format error\n"
	if got := ErrorExcerpt(out); !strings.HasSuffix(got, "exec format error") || strings.Count(got, "noise") > 5 {
		t.Errorf("ErrorExcerpt = %q", got)
	}
}

func TestErrorExcerptFatalAndEscapedMessages(t *testing.T) {
	fatal := "level=INFO msg=\"Submitted job\"\nfatal error: runtime: out of memory\n\nruntime stack:\nruntime.throw(...)\n"
	if got := ErrorExcerpt(fatal); got != "fatal error: runtime: out of memory" {
		t.Errorf("fatal excerpt = %q", got)
	}
	logged := `level=INFO msg="Failed to execute job: job j failed:\nstage s4 (Merge): bundle b-6 failed:\n1: DataSource[x] Out:10\n\tcaused by:\nindex out of range\ngoroutine 89 [running]:\nruntime/debug.Stack()"`
	got := ErrorExcerpt(logged)
	if !strings.Contains(got, "stage s4 (Merge)") || !strings.Contains(got, "index out of range") ||
		strings.Contains(got, "DataSource") || strings.Contains(got, "debug.Stack") {
		t.Errorf("logged excerpt = %q", got)
	}
}

func TestErrorExcerptCutsGluedStack(t *testing.T) {
	out := "panic: Failed to execute job: x\n\tpanic: index out of range [0] with length 0 goroutine 62 [running]:\nruntime/debug.Stack()\n"
	want := "panic: Failed to execute job: x panic: index out of range [0] with length 0"
	if got := ErrorExcerpt(out); got != want {
		t.Errorf("ErrorExcerpt = %q, want %q", got, want)
	}
}
