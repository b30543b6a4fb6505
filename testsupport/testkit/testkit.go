// Package testkit holds the small helpers that tests across the module
// had each written for themselves: a free port, a dead pid, an integer
// from the environment, a log's tail, and a comparison of two outputs.
package testkit

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// FreePort is a loopback TCP port nothing listened on a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// DeadPid is the pid of a process that ran and has exited.
func DeadPid(t testing.TB) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// EnvInt is the positive integer in the environment variable name, or def.
func EnvInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// Tail is the last n lines of s.
func Tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// TailFile is the last n lines of the file at path, or what kept it from
// being read.
func TailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return Tail(string(b), n)
}

// RequireSame fails t unless got equals want, a reference run's output,
// saying where they first differ. An empty reference fails too: two runs
// that wrote nothing agree without showing anything.
func RequireSame(t testing.TB, got, want []byte) {
	t.Helper()
	if len(want) == 0 {
		t.Fatal("the reference run wrote no output")
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		t.Fatalf("output differs from the reference run: %d bytes, %d lines against %d bytes, %d lines; first difference:\n%s",
			len(got), len(gl), len(want), len(wl), firstDiff(gl, wl))
	}
}

func firstDiff(a, b []string) string {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return fmt.Sprintf("line %d: %q against %q", i+1, a[i], b[i])
		}
	}
	return "one is a prefix of the other"
}
