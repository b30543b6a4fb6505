package testkit

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// PythonClient's runner keeps a client's exit status and output, runs a
// script with its folder on the path and a module with -m.
func TestPythonClientExitStatus(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "sibling.py"), []byte("WORD = 'sibling'\n"), 0o644)
	for name, c := range map[string]struct {
		src, out string
		code     int
	}{
		"returns":    {src: "import sibling, sys\nprint(sibling.WORD, sys.argv[1:])\n", out: "sibling ['a', 'b']"},
		"exits":      {src: "import sys\nsys.exit(3)\n", code: 3},
		"exits text": {src: "import sys\nsys.exit('no such mode')\n", out: "no such mode", code: 1},
		"raises":     {src: "raise RuntimeError('boom')\n", out: "RuntimeError: boom", code: 1},
	} {
		script := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".py")
		if err := os.WriteFile(script, []byte(c.src), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := PythonClient(context.Background(), t, "", script, "a", "b").CombinedOutput()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if code != c.code || !strings.Contains(string(out), c.out) {
			t.Errorf("%s: exit %d, output %q; want exit %d with %q", name, code, out, c.code, c.out)
		}
	}
	out, err := PythonClient(context.Background(), t, "", "-m", "json.tool", "--help").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "usage:") {
		t.Errorf("-m json.tool --help: %v, %s", err, out)
	}
}
