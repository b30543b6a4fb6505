package testkit

import (
	"context"
	"os/exec"
	"testing"

	"github.com/beam-runner/beam-runner/testsupport/pyrun"
)

// PythonClient returns a command that runs a Python Beam client (a
// script path, or "-m", MODULE) with args under python (python3 if
// empty), through pyrun: the client leaves with os._exit once it
// returns, so it cannot hang in the interpreter's finalization after its
// job has ended (testsupport/pyrun/pyrun.py says how).
func PythonClient(ctx context.Context, t testing.TB, python string, args ...string) *exec.Cmd {
	t.Helper()
	if python == "" {
		python = "python3"
	}
	path, err := pyrun.Write(t.TempDir())
	if err != nil {
		t.Fatalf("writing pyrun.py: %v", err)
	}
	return exec.CommandContext(ctx, python, append([]string{path}, args...)...)
}
