package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/beam-runner/beam-runner/testsupport/testkit"
	"github.com/beam-runner/beam-runner/testsupport/testwait"
)

// TestStableInputPython: a Python batch job (testdata/stable_random.py,
// on the SDK's default environment) whose DoFn requiring stable input
// reads random values reads one value per index across a forced retry
// and across a server kill. Without the flag, the same retry shows the
// check can fail: the runner computes the random values again.
func TestStableInputPython(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server binary and Python SDK workers")
	}
	tmp := t.TempDir()
	bin := buildServer(t)
	server := &killable{t: t, bin: bin, port: testkit.FreePort(t), dir: t.TempDir(), logDir: tmp}
	server.start()
	defer server.stop()
	endpoint := "localhost:" + strconv.Itoa(server.port)
	jobClient(t, endpoint)

	t.Run("retry", func(t *testing.T) {
		out, _ := stableRandom(t, endpoint, 40, 0.02, "--stable", "--wait")
		requireOneValueEach(t, out, 40)
	})
	t.Run("retry without the flag", func(t *testing.T) {
		out, _ := stableRandom(t, endpoint, 40, 0.02, "--wait")
		if vals := valuesByIndex(t, out); len(vals) == 40 && !anyTwice(vals) {
			t.Errorf("without requires_stable_input the retried bundle read the same values: the check above could not fail")
		}
	})
	t.Run("server kill", func(t *testing.T) {
		const n = 60
		out, id := stableRandom(t, endpoint, n, 0.1, "--stable")
		testwait.Until(t, time.Minute, "the stable DoFn's first values", func() bool {
			return len(valuesByIndex(t, out)) >= 10
		})
		server.killAfterCheckpoint(id, 1)
		server.start()
		waitDone(t, jobClient(t, endpoint), id, server, 5*time.Minute)
		requireOneValueEach(t, out, n)
	})
}

// stableRandom runs testdata/stable_random.py (until the job ends with
// --wait, else until it is submitted) and returns its output directory
// and the job's id.
func stableRandom(t *testing.T, endpoint string, n int, sleep float64, flags ...string) (string, string) {
	t.Helper()
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	args := append([]string{"testdata/stable_random.py", "--endpoint=" + endpoint, "--out=" + out,
		"--n=" + strconv.Itoa(n), "--sleep=" + strconv.FormatFloat(sleep, 'f', -1, 64)}, flags...)
	cmd := testkit.PythonClient(ctx, t, "", args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	id, err := cmd.Output()
	if err != nil {
		t.Fatalf("stable_random.py %v: %v\n%s", flags, err, stderr.String())
	}
	return out, strings.TrimSpace(string(id))
}

// valuesByIndex reads the "INDEX-VALUE" files the stable DoFn wrote.
func valuesByIndex(t *testing.T, dir string) map[int]map[string]bool {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	vals := map[int]map[string]bool{}
	for _, e := range entries {
		is, v, ok := strings.Cut(e.Name(), "-")
		i, err := strconv.Atoi(is)
		if !ok || err != nil {
			continue // the retry's marker
		}
		if vals[i] == nil {
			vals[i] = map[string]bool{}
		}
		vals[i][v] = true
	}
	return vals
}

func anyTwice(vals map[int]map[string]bool) bool {
	for _, vs := range vals {
		if len(vs) > 1 {
			return true
		}
	}
	return false
}

// requireOneValueEach: the stable DoFn read every index, each with one
// value however many times it read it, and its forced retry happened.
func requireOneValueEach(t *testing.T, dir string, n int) {
	t.Helper()
	vals := valuesByIndex(t, dir)
	for i := range n {
		if len(vals[i]) != 1 {
			t.Errorf("index %d: the stable DoFn read values %v, want exactly one", i, vals[i])
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".failed-once")); err != nil {
		t.Errorf("the forced retry did not happen: %v", err)
	}
}
