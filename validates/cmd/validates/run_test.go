package main

import (
	"strings"
	"testing"

	"github.com/beam-runner/beam-runner/validates"
)

// A failed expected check's error is repeated by the verdict, cut to 25
// lines; passes and unlisted failures are not.
func TestWriteWhyRepeatsFailedChecksErrors(t *testing.T) {
	long := strings.Repeat("line\n", 40) + "last"
	r := &report{results: []validates.Result{
		{Name: "diff/a", Status: validates.Fail, Why: "job server: exit status 1; log ends:\nTraceback"},
		{Name: "diff/b", Status: validates.Pass},
		{Name: "diff/c", Status: validates.Fail, Why: long},
		{Name: "diff/d", Status: validates.Fail, Why: "not expected"},
	}}
	var out strings.Builder
	r.writeWhy(&out, []string{"diff/a", "diff/b", "diff/c"})
	got := out.String()
	for _, want := range []string{"--- why diff/a failed ---\njob server: exit status 1; log ends:\nTraceback\n", "--- why diff/c failed ---", "[...]"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "diff/b") || strings.Contains(got, "not expected") || strings.Contains(got, "last") {
		t.Errorf("output has more than the expected failures' first lines:\n%s", got)
	}
}
