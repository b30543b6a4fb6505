package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/beam-runner/beam-runner/testsupport/serverproc"
	"github.com/beam-runner/beam-runner/validates"
)

// runPython runs the pytest checks in validates/python against endpoint and
// returns their results from pytest's JUnit report. Checks that need a
// server of their own (started in a folder of theirs) run runnerBin.
func runPython(ctx context.Context, cfg config, work, endpoint, runnerBin string) ([]validates.Result, error) {
	report := filepath.Join(work, "python.xml")
	os.Remove(report) // a stale report must not pass for this run's
	// Tests have their own pytest-timeout; the context guards the process.
	ctx, cancel := context.WithTimeout(ctx, cfg.pythonTimeout)
	defer cancel()
	cmd := serverproc.GroupCommand(ctx, cfg.pythonBin, "-m", "pytest", "-v", "-p", "no:cacheprovider",
		"--junitxml="+report, "validates/python")
	bin, err := filepath.Abs(runnerBin) // the checks start it in folders of theirs
	if err != nil {
		return nil, err
	}
	cmd.Env = append(os.Environ(), "BEAM_JOB_ENDPOINT="+endpoint, "BEAM_RUNNER_BIN="+bin)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	runErr := cmd.Run()
	results, err := readJUnit(report)
	if err != nil {
		return results, err
	}
	if runErr != nil {
		return results, fmt.Errorf("pytest: %w", runErr)
	}
	return results, nil
}

func readJUnit(path string) ([]validates.Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return validates.ParseJUnit(f, "python/")
}
