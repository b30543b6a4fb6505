package main

import (
	"context"
	"io"
	"path/filepath"
	"strings"

	"github.com/beam-runner/beam-runner/validates"
)

// Beam's Python windowing tests, run unmodified from the wheel:
//   - windowing/window_test: every class of apache_beam/transforms/window_test.py,
//     on the harness's job server (TestPipeline reads --test-pipeline-options);
//   - windowing/custom_windows: fn_runner_test.py's custom-window methods,
//     which PrismRunnerTest skips for Prism alone, through the shim
//     validates/python/beam_custom_windows.py; they start the binary
//     themselves (--prism_bin), as PrismRunnerTest does.
//
// validates/expected_windowing.txt lists the Class/method names that must
// pass; those of the shim's class belong to the second check.
const (
	windowTestCheck    = "windowing/window_test"
	customWindowsCheck = "windowing/custom_windows"

	windowTestModule   = "apache_beam.transforms.window_test"
	customWindowsFile  = "validates/python/beam_custom_windows.py"
	customWindowsClass = "CustomWindowsPrismTest"
	windowingExpected  = "validates/expected_windowing.txt"
)

// customWindowsMethods are the methods of the shim to run: collecting the
// whole class would run all of PrismRunnerTest again.
var customWindowsMethods = []string{"test_custom_merging_window", "test_custom_window_type"}

func windowingChecks() []string { return []string{windowTestCheck, customWindowsCheck} }

// runWindowing runs the enabled windowing checks and records them.
func runWindowing(ctx context.Context, cfg config, work, endpoint, runnerBin string, rep *report) {
	if cfg.disabled[windowTestCheck] && cfg.disabled[customWindowsCheck] {
		return
	}
	expected, err := readPythonClassList(windowingExpected)
	if err != nil {
		rep.problems = append(rep.problems, err.Error())
		return
	}
	custom, others := splitByClass(expected, customWindowsClass)
	ctx, cancel := context.WithTimeout(ctx, cfg.prismTimeout)
	defer cancel()
	if !cfg.disabled[windowTestCheck] {
		timed("Python window_test.py", func() error {
			res, err := runWindowTest(ctx, cfg, work, endpoint)
			rep.addChecks(windowTestCheck, res, others, err)
			return err
		})
	}
	if !cfg.disabled[customWindowsCheck] {
		timed("Python custom windows of fn_runner_test.py", func() error {
			res, err := runCustomWindows(ctx, cfg, work, runnerBin)
			rep.addChecks(customWindowsCheck, res, custom, err)
			return err
		})
	}
}

func runWindowTest(ctx context.Context, cfg config, work, endpoint string) ([]validates.Result, error) {
	b := beamTests{check: windowTestCheck, label: "window_test.py", modules: []string{windowTestModule}}
	return b.run(ctx, cfg, work, endpoint)
}

func runCustomWindows(ctx context.Context, cfg config, work, runnerBin string) ([]validates.Result, error) {
	shim, err := filepath.Abs(customWindowsFile)
	if err != nil {
		return nil, err
	}
	nodes := make([]string, len(customWindowsMethods))
	for i, m := range customWindowsMethods {
		nodes[i] = shim + "::" + customWindowsClass + "::" + m
	}
	return runPytest(ctx, cfg, pytestRun{
		label: customWindowsClass, rootdir: filepath.Dir(shim), nodes: nodes,
		report: filepath.Join(work, "custom_windows.xml"),
		opts:   "--prism_bin=" + shellQuote(runnerBin) + " --environment_type=LOOPBACK",
		parse:  byClass,
	})
}

func byClass(r io.Reader) ([]validates.Result, error) { return validates.ParseJUnitByClass(r, "") }

// readPythonClassList reads a list of Class/method names.
func readPythonClassList(path string) ([]string, error) {
	return readListWith(path, validates.ParsePythonClassList)
}

// splitByClass parts Class/method names into those of class and the rest.
func splitByClass(names []string, class string) (of, rest []string) {
	for _, n := range names {
		if strings.HasPrefix(n, class+"/") {
			of = append(of, n)
		} else {
			rest = append(rest, n)
		}
	}
	return of, rest
}
