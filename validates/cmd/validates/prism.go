package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/beam-runner/beam-runner/testsupport/serverproc"
	"github.com/beam-runner/beam-runner/validates"
)

// Beam's Python portable-runner suite: the class PrismRunnerTest of the
// test module shipped in the installed apache-beam wheel, run unmodified.
// It starts the job server itself (its --prism_bin), one per class.
const (
	prismModule = "apache_beam.runners.portability.prism_runner_test"
	prismClass  = "PrismRunnerTest"
	// pluginDir holds beam_options_plugin, which defines the
	// --test-pipeline-options pytest option Beam's conftest.py (not in the
	// wheel) would.
	pluginDir = "validates/python/plugins"
)

// runPrism runs every test of the class against runnerBin and returns
// their results. pytest exiting 1 (some tests failed) is not an error: the
// expected list decides which failures matter.
func runPrism(ctx context.Context, cfg config, work, runnerBin string) ([]validates.Result, error) {
	file, err := pythonModuleFile(ctx, cfg.pythonBin, prismModule)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.prismTimeout)
	defer cancel()
	opts := "--prism_bin=" + shellQuote(runnerBin) + " --environment_type=LOOPBACK"
	return runBeamPytest(ctx, cfg, file, prismClass, filepath.Join(work, "prism.xml"), opts)
}

// runBeamPytest runs one test class of a Beam test file from the wheel,
// unmodified, with --test-pipeline-options opts and extra environment
// variables, and returns each method's result named "class/method".
func runBeamPytest(ctx context.Context, cfg config, file, class, report, opts string, env ...string) ([]validates.Result, error) {
	return runPytest(ctx, cfg, pytestRun{
		label: class, rootdir: wheelRoot(file), nodes: []string{file + "::" + class},
		report: report, opts: opts, env: env,
		parse: func(r io.Reader) ([]validates.Result, error) { return validates.ParseJUnit(r, class+"/") },
	})
}

// pytestRun is one pytest run of test classes written for Beam's conftest.
type pytestRun struct {
	label   string // names the run in errors
	rootdir string
	nodes   []string // pytest node ids: files, classes or methods
	report  string   // JUnit XML path
	opts    string   // --test-pipeline-options
	marker  string   // pytest -m: only the tests marked so; "": all
	env     []string
	parse   func(io.Reader) ([]validates.Result, error) // reads the report
}

// wheelRoot is the directory a module file of the wheel sits in the
// package tree of (site-packages), so node ids read as in Beam.
func wheelRoot(file string) string {
	return filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(file))))
}

// runPytest runs r and returns its results. pytest exiting 1 (some tests
// failed) is not an error: the expected list decides which failures matter.
func runPytest(ctx context.Context, cfg config, r pytestRun) ([]validates.Result, error) {
	plugins, err := filepath.Abs(pluginDir)
	if err != nil {
		return nil, err
	}
	os.Remove(r.report) // a stale report must not pass for this run's
	// The job servers the tests start share its group.
	cmd := serverproc.GroupCommand(ctx, cfg.pythonBin, beamPytestArgs(cfg, r)...)
	cmd.Env = append(append(os.Environ(), "PYTHONPATH="+joinPath(plugins, os.Getenv("PYTHONPATH"))), r.env...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	runErr := cmd.Run()
	results, err := readReport(r.report, r.parse)
	if err != nil {
		return results, fmt.Errorf("%s report: %w (pytest: %v)", r.label, err, runErr)
	}
	var exit *exec.ExitError
	if runErr != nil && !(errors.As(runErr, &exit) && exit.ExitCode() == 1) {
		return results, fmt.Errorf("pytest %s: %w", r.label, runErr)
	}
	return results, nil
}

func beamPytestArgs(cfg config, r pytestRun) []string {
	args := []string{
		"-m", "pytest", "-q", "-rfEs", "-p", "no:cacheprovider", "-p", "beam_options_plugin",
		"--rootdir=" + r.rootdir,
		// Thread method: a test stuck in gRPC never sees SIGALRM.
		fmt.Sprintf("--timeout=%d", int(cfg.prismTestTimeout.Seconds())), "--timeout_method=thread",
		"--junitxml=" + r.report,
	}
	if r.marker != "" {
		args = append(args, "-m", r.marker)
	}
	args = append(args, r.nodes...)
	return append(args, "--test-pipeline-options="+r.opts)
}

// pythonModuleFile finds a module's source file in the interpreter's
// installation, without importing it (importing Beam's test modules is slow).
func pythonModuleFile(ctx context.Context, python, module string) (string, error) {
	out, err := exec.CommandContext(ctx, python, "-c",
		"import importlib.util, sys; print(importlib.util.find_spec(sys.argv[1]).origin)", module).Output()
	if err != nil {
		return "", fmt.Errorf("find %s with %s: %w (is apache-beam installed? run scripts/setup.sh)", module, python, err)
	}
	return strings.TrimSpace(string(out)), nil
}

func readReport(path string, parse func(io.Reader) ([]validates.Result, error)) ([]validates.Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parse(f)
}

func joinPath(dir, rest string) string {
	if rest == "" {
		return dir
	}
	return dir + string(os.PathListSeparator) + rest
}

// shellQuote quotes s for the shlex.split the test applies to its options.
func shellQuote(s string) string {
	if !strings.ContainsAny(s, " \t\n'\"\\$`") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'"
}

// readPrismList reads the expected PrismRunnerTest methods as table names.
func readPrismList(path string) ([]string, error) { return readPythonList(path, prismClass) }

// readPythonList reads a list of expected methods of a Python test class
// as table names ("class/method").
func readPythonList(path, class string) ([]string, error) {
	methods, err := readListWith(path, validates.ParsePythonList)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(methods))
	for i, m := range methods {
		names[i] = class + "/" + m
	}
	return names, nil
}
