package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/beam-runner/beam-runner/internal/procfs"
	"github.com/beam-runner/beam-runner/validates"
	"github.com/beam-runner/beam-runner/validates/pyhot"
)

// The Python hot-key check groups one key holding more values than the
// memory limit lets the server hold, on a server of its own (started with
// that limit, so its peak RSS is this job's alone): the summary must be
// right, the values must reach Python as a state-backed iterable, and the
// server's peak RSS must stay within the bound.
const pyHotKeyCheck = "memory/py-hotkey"

var hotFlags struct {
	values, valueSize int
	limit             string
	maxRSSMiB         int64
}

func init() {
	flag.IntVar(&hotFlags.values, "py_hotkey_values", 1<<20, "values under the one key of "+pyHotKeyCheck)
	flag.IntVar(&hotFlags.valueSize, "py_hotkey_value_size", 1024, "bytes per value of "+pyHotKeyCheck+" (a multiple of 8)")
	flag.StringVar(&hotFlags.limit, "py_hotkey_memory_limit", "256MiB", "--memory_limit of "+pyHotKeyCheck+"'s server")
	flag.Int64Var(&hotFlags.maxRSSMiB, "py_hotkey_max_rss_mib", 512, "most peak RSS of "+pyHotKeyCheck+"'s server, in MiB")
}

// runPyHotKey runs the check unless disabled and records it.
func runPyHotKey(ctx context.Context, cfg config, work, runnerBin string, rep *report) {
	if cfg.disabled[pyHotKeyCheck] {
		return
	}
	timed(pyHotKeyCheck, func() error {
		res := result(pyHotKeyCheck, func() error { return pyHotKey(ctx, cfg, filepath.Join(work, "pyhot"), runnerBin) })
		rep.addChecks(pyHotKeyCheck, []validates.Result{res}, []string{pyHotKeyCheck}, nil)
		return nil
	})
}

func pyHotKey(ctx context.Context, cfg config, dir, runnerBin string) error {
	script, err := filepath.Abs(pyhot.Script)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	state := filepath.Join(dir, "state")
	if err := os.MkdirAll(state, 0o755); err != nil {
		return err
	}
	srv, err := startServer(ctx, runnerBin, filepath.Join(dir, "server.log"),
		fmt.Sprintf("%s --state_dir=%s --memory_limit=%s", serverArgs(cfg), state, hotFlags.limit))
	if err != nil {
		return err
	}
	defer srv.stop()
	out := filepath.Join(dir, "out")
	err = runPythonClient(ctx, cfg.checkTimeout, filepath.Join(dir, "log"), cfg.pythonBin, script,
		fmt.Sprint("--values=", hotFlags.values), fmt.Sprint("--value_size=", hotFlags.valueSize), "--output="+out,
		"--runner=PortableRunner", "--job_endpoint="+srv.endpoint, "--environment_type=LOOPBACK")
	// Read before stop: /proc/<pid> goes with the process.
	peak, rssErr := procfs.ReadVmHWM(srv.proc.Pid())
	if err != nil {
		return fmt.Errorf("job server (log %s): %w", srv.logPath, err)
	}
	if rssErr != nil {
		return fmt.Errorf("server peak RSS: %w", rssErr)
	}
	line, err := os.ReadFile(out)
	if err != nil {
		return err
	}
	got, err := pyhot.Parse(string(bytes.TrimSpace(line)))
	if err != nil {
		return err
	}
	if err := pyhot.Judge(got, pyhot.Expected(int64(hotFlags.values), hotFlags.valueSize), peak, hotFlags.maxRSSMiB<<10); err != nil {
		return err
	}
	fmt.Printf("validates: %s: %s under --memory_limit=%s, server peak RSS %d MiB\n", pyHotKeyCheck, got, hotFlags.limit, peak>>10)
	return nil
}
