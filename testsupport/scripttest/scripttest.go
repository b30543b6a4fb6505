// Package scripttest runs a package's datadriven scripts: every
// testdata/*.txt as a subtest of its own, each with a fresh runner.
package scripttest

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// Run plays each testdata/*.txt with datadriven, the commands of one file
// going to the function newRunner makes for it; no script at all fails t.
func Run(t *testing.T, newRunner func() func(*testing.T, *datadriven.TestData) string) {
	t.Helper()
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts in testdata (%v)", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) {
			datadriven.RunTest(t, f, newRunner())
		})
	}
}
