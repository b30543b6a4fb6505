package ownerdir

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func TestOwnedByMe(t *testing.T) {
	dir := t.TempDir()
	if !OwnedByMe(dir) {
		t.Errorf("OwnedByMe(%s) = false for a directory this test made", dir)
	}
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{file, link, filepath.Join(dir, "missing")} {
		if OwnedByMe(p) {
			t.Errorf("OwnedByMe(%s) = true, want false for what is not a directory", p)
		}
	}
}

func TestProcessGone(t *testing.T) {
	if ProcessGone(os.Getpid()) {
		t.Error("ProcessGone(own pid) = true")
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if !ProcessGone(cmd.Process.Pid) {
		t.Errorf("ProcessGone(%d) = false for a process that exited and was reaped", cmd.Process.Pid)
	}
}
