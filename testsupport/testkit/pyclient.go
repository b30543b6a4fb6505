package testkit

import (
	"context"
	_ "embed"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

//go:embed pyrun.py
var pyRun []byte

// PythonClient returns a command that runs a Python Beam client (a
// script path, or "-m", MODULE) with args under python (python3 if
// empty), through pyrun.py: the client leaves with os._exit once it
// returns, so it cannot hang in the interpreter's finalization after its
// job has ended (pyrun.py says how).
func PythonClient(ctx context.Context, t testing.TB, python string, args ...string) *exec.Cmd {
	t.Helper()
	if python == "" {
		python = "python3"
	}
	path := filepath.Join(t.TempDir(), "pyrun.py")
	if err := os.WriteFile(path, pyRun, 0o644); err != nil {
		t.Fatalf("writing %s: %v", path, err)
	}
	return exec.CommandContext(ctx, python, append([]string{path}, args...)...)
}
