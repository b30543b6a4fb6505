package testkit

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestTail(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"a\nb\nc\n", 2, "b\nc"},
		{"a\nb", 5, "a\nb"},
		{"", 3, ""},
	} {
		if got := Tail(tc.s, tc.n); got != tc.want {
			t.Errorf("Tail(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
	path := filepath.Join(t.TempDir(), "log")
	if err := os.WriteFile(path, []byte("1\n2\n3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := TailFile(path, 1); got != "3" {
		t.Errorf("TailFile = %q, want 3", got)
	}
}

func TestEnvInt(t *testing.T) {
	t.Setenv("TESTKIT_N", "7")
	t.Setenv("TESTKIT_BAD", "-2")
	if EnvInt("TESTKIT_N", 1) != 7 || EnvInt("TESTKIT_BAD", 1) != 1 || EnvInt("TESTKIT_UNSET", 3) != 3 {
		t.Error("EnvInt: want 7 from the environment, the default for a negative or unset value")
	}
}

func TestDeadPidIsGone(t *testing.T) {
	if pid := DeadPid(t); syscall.Kill(pid, 0) == nil {
		t.Errorf("pid %d still answers a signal", pid)
	}
}
