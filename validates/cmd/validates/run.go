package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/beam-runner/beam-runner/validates"
)

// primitivesPkg is Beam's Go ValidatesRunner package for core primitives.
const primitivesPkg = "github.com/apache/beam/sdks/v2/go/test/integration/primitives"

// run executes the whole harness and reports whether every required test
// passed. An error means the harness itself could not do its job.
func run(ctx context.Context, cfg config) (bool, error) {
	expected, err := readList(cfg.expectedFile)
	if err != nil {
		return false, err
	}
	var prismExpected []string
	if cfg.prism { // a bad list fails now, not after the Go suite
		if prismExpected, err = readPrismList(cfg.prismExpected); err != nil {
			return false, err
		}
	}
	work, err := absWork(cfg.workDir)
	if err != nil {
		return false, err
	}
	bins, err := buildAll(ctx, cfg, work)
	if err != nil {
		return false, err
	}
	// A fresh store per run: records of earlier runs must not show up in
	// this one's job lists, nor two runs share a directory.
	state, err := os.MkdirTemp(work, "state-")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(state)
	srv, err := startServer(ctx, bins.runner, filepath.Join(work, "server.log"), "--state_dir="+state+" "+serverArgs(cfg))
	if err != nil {
		return false, err
	}
	defer srv.stop()
	fmt.Printf("validates: job server %s listening on %s (log %s)\n", bins.runner, srv.endpoint, srv.logPath)

	// A dead server would leave each running test hanging until its own
	// timeout: cancel the suites as soon as it exits.
	sctx, cancel := srv.cancelOnExit(ctx)
	defer cancel()
	rep := runSuites(sctx, cfg, work, bins, srv, expected, prismExpected)
	srv.stop() // before reporting, so its log is complete
	return rep.print(srv), nil
}

func readList(path string) ([]string, error) { return readListWith(path, validates.ParseList) }

// readListWith opens the list at path and parses it; errors name the file.
func readListWith(path string, parse func(io.Reader) ([]string, error)) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := parse(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return names, nil
}

type binaries struct{ runner, tests string }

// buildAll builds the job server (unless given) and Beam's test binary once.
func buildAll(ctx context.Context, cfg config, work string) (binaries, error) {
	b := binaries{runner: cfg.runnerBin, tests: filepath.Join(work, "primitives.test")}
	if b.runner == "" {
		b.runner = filepath.Join(work, "beam-runner")
		if err := timed("build job server", func() error {
			return goCmd(ctx, "build", "-o", b.runner, "./cmd/beam-runner")
		}); err != nil {
			return b, err
		}
	}
	err := timed("build "+primitivesPkg+" test binary", func() error {
		return goCmd(ctx, "test", "-c", "-o", b.tests, primitivesPkg)
	})
	return b, err
}

// report gathers everything the final table and verdict need.
type report struct {
	expected  []string // Go tests that must pass, then Python tests run
	results   []validates.Result
	problems  []string // harness-level failures not tied to one test
	summaries []validates.Summary
}

// summarize counts the results added since from (one suite's) against
// the expected names added since expFrom.
func (r *report) summarize(suite string, from, expFrom int) {
	if from == len(r.results) && expFrom == len(r.expected) {
		return // nothing ran or was expected (all disabled)
	}
	r.summaries = append(r.summaries, validates.Summarize(suite, r.results[from:], r.expected[expFrom:]))
}

// serverArgs are the flags the server gets besides --job_port.
func serverArgs(cfg config) string {
	if cfg.workerStartTimeout <= 0 {
		return cfg.serverArgs
	}
	return fmt.Sprintf("--worker_start_timeout=%s %s", cfg.workerStartTimeout, cfg.serverArgs)
}

func runSuites(ctx context.Context, cfg config, work string, bins binaries, srv *server, expected, prismExpected []string) *report {
	rep := &report{expected: expected}
	runGoSuite(ctx, cfg, work, bins, srv.endpoint, rep)
	// A crashed server explains every later failure, and Python jobs would
	// only hang until their timeouts: report it and stop here.
	if err := srv.exitedEarly(); err != nil {
		rep.problems = append(rep.problems, err.Error())
		return rep
	}
	runPythonSuites(ctx, cfg, work, bins, srv.endpoint, rep, prismExpected)
	from, expFrom := len(rep.results), len(rep.expected)
	runJava(ctx, cfg, work, srv.endpoint, rep)
	rep.summarize("Java ValidatesRunner and listed NeedsRunner (beam-sdks-java-core 2.73.0 tests; FileIOTest from 2.77.0 source)", from, expFrom)
	if err := srv.exitedEarly(); err != nil {
		rep.problems = append([]string{err.Error()}, rep.problems...)
	}
	runExtraChecks(ctx, cfg, work, bins.runner, srv, rep)
	return rep
}

// runGoSuite runs Beam's Go ValidatesRunner tests: the expected ones, and
// those --also names.
func runGoSuite(ctx context.Context, cfg config, work string, bins binaries, endpoint string, rep *report) {
	g := goRun{bin: bins.tests, endpoint: endpoint, timeout: cfg.goTimeout, work: work}
	// TestDrain's job runs until an operator drains it: play that part.
	// Only the Go suite has a job to drain; the lifecycle checks measure
	// the server's idle CPU, which the drainer's polling would disturb.
	drainCtx, stopDrainer := context.WithCancel(ctx)
	defer stopDrainer()
	go operateDrains(drainCtx, endpoint, logStderr)
	timed("Go expected tests", func() error {
		rep.results = append(rep.results, g.run(ctx, "expected", validates.RunRegex(rep.expected), "")...)
		return nil
	})
	if also := splitAlso(cfg.also); len(also) > 0 {
		timed("Go --also tests", func() error {
			re := "^(" + strings.Join(also, "|") + ")$"
			rep.results = append(rep.results, g.run(ctx, "also", re, validates.RunRegex(rep.expected))...)
			return nil
		})
	}
	rep.summarize("Go ValidatesRunner", 0, 0)
}

// runPythonSuites runs the Python checks and Beam's Python suites that
// cfg asks for, each summarized on its own.
func runPythonSuites(ctx context.Context, cfg config, work string, bins binaries, endpoint string, rep *report, prismExpected []string) {
	if cfg.python {
		from, expFrom := len(rep.results), len(rep.expected)
		timed("Python portable checks", func() error {
			rep.addPython(runPython(ctx, cfg, work, endpoint, bins.runner))
			return nil
		})
		rep.summarize("Python portable checks", from, expFrom)
	}
	if cfg.prism {
		from, expFrom := len(rep.results), len(rep.expected)
		timed("Python "+prismClass, func() error {
			res, err := runPrism(ctx, cfg, work, bins.runner)
			rep.addPrism(res, err, prismExpected)
			return err
		})
		rep.summarize(prismClass, from, expFrom)
	}
	from, expFrom := len(rep.results), len(rep.expected)
	runWindowing(ctx, cfg, work, endpoint, bins.runner, rep)
	rep.summarize("Python windowing (window_test.py, custom windows)", from, expFrom)
	from, expFrom = len(rep.results), len(rep.expected)
	runBeamTests(ctx, cfg, work, endpoint, rep)
	rep.summarize("Python ValidatesRunner and trigger tests (it_validatesrunner, trigger_test.py)", from, expFrom)
}

// runExtraChecks runs the lifecycle checks, Beam's Go package tests, the
// differential checks, the hot-key check on a server of its own, then
// wordcount (the longest).
func runExtraChecks(ctx context.Context, cfg config, work, runnerBin string, srv *server, rep *report) {
	from, expFrom := len(rep.results), len(rep.expected)
	defer func() { rep.summarize("lifecycle, differential and wordcount checks", from, expFrom) }()
	timed("lifecycle checks", func() error {
		res, names, err := runLifecycle(ctx, cfg, work, srv)
		rep.addChecks("lifecycle", res, names, err)
		return err
	})
	runGoPackages(ctx, cfg, work, srv.endpoint, rep)
	runDifferential(ctx, cfg, work, srv.endpoint, rep)
	runPyHotKey(ctx, cfg, work, runnerBin, rep)
	runXlang(ctx, cfg, work, srv.endpoint, rep)
	runWordcountChecks(ctx, cfg, work, srv.endpoint, rep)
}

// runWordcountChecks runs the enabled wordcount checks on one build, input
// and oracle.
func runWordcountChecks(ctx context.Context, cfg config, work, endpoint string, rep *report) {
	variants := wordcountChecks(endpoint)
	var names []string
	for _, name := range []string{wordcountCheck, wordcountEnvCheck} {
		if !cfg.disabled[name] {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return
	}
	timed("wordcount equivalence", func() error {
		w, err := prepareWordcount(ctx, cfg, work)
		var res []validates.Result
		for _, name := range names {
			res = append(res, result(name, func() error {
				if err != nil {
					return err
				}
				args := variants[name]
				if name == wordcountEnvCheck {
					// The Go SDK stages this binary as the workers' (it
					// would cross-compile the program's source otherwise).
					args = append(args, "--worker_binary="+w.bin)
				}
				return w.check(ctx, cfg, wordcountDirs[name], args...)
			}))
		}
		rep.addChecks(wordcountCheck, res, names, nil)
		return nil
	})
}

func (r *report) addPython(res []validates.Result, err error) {
	if err != nil {
		r.problems = append(r.problems, "python: "+err.Error())
	}
	if len(res) == 0 {
		r.problems = append(r.problems, "python: no test results")
	}
	// Every Python check that ran is required.
	for _, x := range res {
		r.expected = append(r.expected, x.Name)
	}
	r.results = append(r.results, res...)
}

// addPrism records PrismRunnerTest results: the listed methods are expected,
// the others (failing, or skipped by the test file itself) are reported.
func (r *report) addPrism(res []validates.Result, err error, expected []string) {
	if err != nil {
		r.problems = append(r.problems, prismClass+": "+err.Error())
	}
	if len(res) == 0 {
		r.problems = append(r.problems, prismClass+": no test results")
	}
	r.expected = append(r.expected, expected...)
	r.results = append(r.results, res...)
}

// print writes the table and verdict, and the server log's tail on failure.
func (r *report) print(srv *server) bool {
	fmt.Println()
	validates.WriteTable(os.Stdout, r.expected, r.results)
	fmt.Println()
	for _, s := range r.summaries {
		fmt.Println(s)
	}
	v := validates.Decide(r.expected, r.results)
	ok := v.OK() && len(r.problems) == 0
	// The server log's tail comes before the verdict: CI keeps only the
	// output's last lines, and they must say what failed.
	if !ok {
		fmt.Printf("\n--- last lines of the job server log %s ---\n%s\n", srv.logPath, srv.tail(80))
	}
	r.writeWhy(os.Stdout, v.Failed)
	fmt.Print("\n", v.String())
	for _, p := range r.problems {
		fmt.Println("harness problem:", p)
	}
	if !ok {
		fmt.Println("validates: FAIL")
	} else {
		fmt.Println("validates: PASS")
	}
	return ok
}

// writeWhy repeats the start of each failed check's error next to the
// verdict, for the same reason as the log's tail.
func (r *report) writeWhy(w io.Writer, failed []string) {
	for _, res := range r.results {
		if res.Why == "" || !slices.Contains(failed, res.Name) {
			continue
		}
		lines := strings.Split(res.Why, "\n")
		if len(lines) > 25 {
			lines = append(lines[:25], "[...]")
		}
		fmt.Fprintf(w, "\n--- why %s failed ---\n%s\n", res.Name, strings.Join(lines, "\n"))
	}
}

// timed runs f and logs how long it took: CI time is budgeted per phase.
func timed(what string, f func() error) error {
	start := time.Now()
	fmt.Printf("validates: %s ...\n", what)
	err := f()
	status := "done"
	if err != nil {
		status = "FAILED: " + err.Error()
	}
	fmt.Printf("validates: %s %s in %s\n", what, status, time.Since(start).Round(100*time.Millisecond))
	return err
}
