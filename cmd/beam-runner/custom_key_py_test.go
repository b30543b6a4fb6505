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
	"github.com/beam-runner/beam-runner/validates/differential"
)

// TestPythonCustomKeyCoder runs testdata/custom_key_coder.py, whose keys
// have a custom Coder subclass the runner cannot read, on the server
// binary with LOOPBACK workers: the batch pipeline (GroupByKey and a
// stateful DoFn, its keying stage split) gives what Python's DirectRunner
// gives; the same keys from a TestStream whose payload coder is KV<that
// coder, varint> (elements the runner must not split itself) pass their
// assert_that; and a pipeline of no transforms ends DONE.
func TestPythonCustomKeyCoder(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server binary and Python SDK workers")
	}
	tmp := t.TempDir()
	logPath := filepath.Join(tmp, "server.log")
	port := testkit.FreePort(t)
	srv := startBinaryTo(t, createLog(t, logPath), buildServer(t), port, t.TempDir(), "--serve_http=false", "--log_level=info")
	defer func() { srv.Process.Kill(); srv.Wait() }()
	endpoint := "localhost:" + strconv.Itoa(port)
	jobClient(t, endpoint)
	portable := []string{"--runner=PortableRunner", "--job_endpoint=" + endpoint, "--environment_type=LOOPBACK"}

	t.Run("batch under splits matches DirectRunner", func(t *testing.T) {
		want := customKeyBatch(t, filepath.Join(tmp, "direct"), "--runner=DirectRunner")
		// The keying stage is split only when a slot is idle while its
		// bundle runs: LOOPBACK harnesses in one interpreter get one slot
		// (jobs.SharedInterpreter), so the workers are processes here. A
		// run without any split did not test splits, so it is run again
		// (each run's output is still compared).
		processes := append([]string{"--experiments=use_loopback_process_worker"}, portable...)
		for run := 1; ; run++ {
			before := strings.Count(readFile(t, logPath), "split running bundle")
			got := customKeyBatch(t, filepath.Join(tmp, "runner"+strconv.Itoa(run)), processes...)
			if d := differential.DiffLines(want, got, 10); len(d) > 0 {
				t.Fatalf("run %d: output differs from DirectRunner's (- want, + got):\n%s", run, strings.Join(d, "\n"))
			}
			if strings.Count(readFile(t, logPath), "split running bundle") > before {
				return
			}
			if run == 3 {
				t.Fatalf("no bundle was split in %d runs: the test did not test splits", run)
			}
		}
	})
	t.Run("teststream", func(t *testing.T) { customKeyScript(t, append([]string{"teststream"}, portable...)...) })
	t.Run("empty pipeline", func(t *testing.T) { customKeyScript(t, append([]string{"empty"}, portable...)...) })
}

// customKeyBatch runs the script's batch mode with flags and returns its
// output lines, sorted.
func customKeyBatch(t *testing.T, out string, flags ...string) []string {
	t.Helper()
	customKeyScript(t, append([]string{"batch", "--out", out}, flags...)...)
	lines, err := differential.ReadLines(out) // sorted
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

// customKeyScript runs testdata/custom_key_coder.py with args; it exits 0
// only if the job ended DONE.
func customKeyScript(t *testing.T, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := testkit.PythonClient(ctx, t, "", append([]string{"testdata/custom_key_coder.py"}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("custom_key_coder.py %s: %v\n%s", args[0], err, out)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
