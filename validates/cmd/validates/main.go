// Command validates runs Beam's ValidatesRunner suites against the
// beam-runner job server and fails unless every expected test passes.
//
// It builds the server (or takes BEAM_RUNNER_BIN), starts it on a free port,
// builds Beam's Go integration test binary once, runs the expected tests (and
// any --also tests) against that one server, then the Python portable checks
// and Beam's Python portable-runner suite (PrismRunnerTest, which starts the
// binary itself), Beam's Java ValidatesRunner suite (Maven, validates/java),
// and prints a table of every result. Run it from the repository root:
//
//	go run ./validates/cmd/validates [-also 'TestTimers.*,TestBagState']
//
// It is a command rather than a go test so that `go test ./...` never builds
// Beam's integration package or starts a server.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

type config struct {
	runnerBin     string
	workDir       string
	expectedFile  string
	also          string
	serverArgs    string
	goTimeout     time.Duration
	python        bool
	pythonBin     string
	pythonTimeout time.Duration

	prism            bool // run Beam's PrismRunnerTest
	prismExpected    string
	prismTimeout     time.Duration
	prismTestTimeout time.Duration

	disabled           map[string]bool // extra checks turned off
	checkTimeout       time.Duration
	workerStartTimeout time.Duration
	wordcountMB        int
	wordcountSeed      int64

	javaForks       int // Surefire forkCount for the Java suite
	javaTimeout     time.Duration
	javaTestTimeout time.Duration
}

func parseFlags() config {
	var c config
	flag.StringVar(&c.runnerBin, "runner_bin", os.Getenv("BEAM_RUNNER_BIN"),
		"job server binary to test; empty builds ./cmd/beam-runner (env BEAM_RUNNER_BIN)")
	flag.StringVar(&c.workDir, "work", envOr("VALIDATES_WORK", ".work/validates"),
		"directory for built binaries, logs and reports (env VALIDATES_WORK)")
	flag.StringVar(&c.expectedFile, "expected", "validates/expected_go.txt",
		"list of Go tests that must pass")
	flag.StringVar(&c.also, "also", os.Getenv("VALIDATES_ALSO"),
		"comma-separated regexps of extra Go tests to run and report without failing, e.g. 'TestTimers.*,TestBagState' or '.*' (env VALIDATES_ALSO)")
	flag.StringVar(&c.serverArgs, "server_args", envOr("VALIDATES_SERVER_ARGS", "--log_kind=text"),
		"extra space-separated flags for the job server; text logs read best in a file (env VALIDATES_SERVER_ARGS)")
	flag.DurationVar(&c.goTimeout, "go_timeout", 10*time.Minute,
		"-test.timeout for each Go test invocation")
	flag.BoolVar(&c.python, "python", os.Getenv("VALIDATES_PYTHON") != "0",
		"run the Python portable checks in validates/python (env VALIDATES_PYTHON=0 disables)")
	flag.StringVar(&c.pythonBin, "python_bin", envOr("PYTHON", "python3"), "Python interpreter (env PYTHON)")
	flag.DurationVar(&c.pythonTimeout, "python_timeout", 10*time.Minute, "limit for the whole Python run")
	flag.BoolVar(&c.prism, "prism", os.Getenv("VALIDATES_PRISM") != "0",
		"run Beam's Python portable-runner suite (PrismRunnerTest, from the apache-beam wheel) against the binary (env VALIDATES_PRISM=0 disables)")
	flag.StringVar(&c.prismExpected, "expected_python", "validates/expected_python.txt",
		"list of PrismRunnerTest methods that must pass")
	flag.DurationVar(&c.prismTimeout, "prism_timeout", 20*time.Minute, "limit for the whole PrismRunnerTest run")
	flag.DurationVar(&c.prismTestTimeout, "prism_test_timeout", 3*time.Minute, "pytest-timeout for each PrismRunnerTest test")
	disable := flag.String("disable", os.Getenv("VALIDATES_DISABLE"),
		"comma-separated extra checks to skip while iterating, e.g. 'wordcount,lifecycle/cancel' or 'lifecycle' for all lifecycle checks (env VALIDATES_DISABLE)")
	flag.DurationVar(&c.checkTimeout, "check_timeout", 5*time.Minute, "limit for each lifecycle check and each wordcount run")
	flag.DurationVar(&c.workerStartTimeout, "worker_start_timeout", 10*time.Second,
		"passed to the server as --worker_start_timeout (short, so the PROCESS check is quick); 0 passes nothing and assumes the server's 2m default")
	// Go's textio starts one restriction per 64 MiB: 150 MiB makes three,
	// which are then split dynamically too.
	flag.IntVar(&c.wordcountMB, "wordcount_mb", 150, "size of the wordcount input in MiB (generated once, cached in the work dir)")
	flag.Int64Var(&c.wordcountSeed, "wordcount_seed", 1, "seed of the generated wordcount input")
	flag.IntVar(&c.javaForks, "java_forks", 2,
		"test JVMs of the Java ValidatesRunner suite run at once (Surefire forkCount); its jobs mostly wait, so 2 halve its time")
	flag.DurationVar(&c.javaTimeout, "java_timeout", 30*time.Minute, "limit for the whole Java ValidatesRunner suite")
	flag.DurationVar(&c.javaTestTimeout, "java_test_timeout", 5*time.Minute,
		"a Java test's job still running after this is cancelled and the test fails")
	flag.Parse()
	off, err := parseDisable(*disable)
	if err != nil {
		fmt.Fprintln(os.Stderr, "validates:", err)
		os.Exit(2)
	}
	c.disabled = off
	return c
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func main() {
	cfg := parseFlags()
	// Ctrl-C or SIGTERM cancels the run; deferred cleanup stops the server.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ok, err := run(ctx, cfg)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "validates:", err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}

// splitAlso turns the --also value into regexps, dropping empty items.
func splitAlso(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// absWork makes the work dir absolute: child processes run elsewhere.
func absWork(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	return abs, os.MkdirAll(abs, 0o755)
}
