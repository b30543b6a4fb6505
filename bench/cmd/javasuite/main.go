// Command javasuite runs Beam's Java ValidatesRunner suite (validates/java)
// on beam-runner and on Prism, one after the other in one run, each with a
// fresh server per pipeline as Beam's TestPrismRunner starts Prism, and
// prints what each passed, the wall times and the per-test medians as
// markdown. It then checks that the runs left no job store behind in the
// user's cache directory or the temp directory.
//
// Run it from the repository root on a quiet machine, after
// scripts/setup.sh: go run ./bench/cmd/javasuite [--forks=2] [--tests=CreateTest].
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/beam-runner/beam-runner/bench"
	"github.com/beam-runner/beam-runner/validates"
)

var (
	forks     = flag.Int("forks", 2, "test JVMs in parallel (Surefire's forkCount), the same for both runners")
	tests     = flag.String("tests", "", "Surefire -Dtest filter; empty runs the whole suite")
	timeout   = flag.Duration("test_timeout", 5*time.Minute, "a job still running then is cancelled and its test fails")
	workDir   = flag.String("work_dir", ".work/javasuite", "binaries, reports and logs")
	skipBuild = flag.Bool("skip_build", false, "reuse the binaries in work_dir/bin")
)

func main() {
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "javasuite:", err)
		os.Exit(1)
	}
}

func run() error {
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	work, err := filepath.Abs(*workDir)
	if err == nil {
		err = os.MkdirAll(work, 0o755)
	}
	if err == nil && !*skipBuild {
		err = bench.Build(root, work, nil)
	}
	if err != nil {
		return err
	}
	before := leftStores()
	var runs []bench.SuiteRun
	for _, r := range []string{"beam-runner", "prism"} {
		sr, err := runSuite(root, work, r)
		if err != nil {
			return err
		}
		runs = append(runs, sr)
	}
	fmt.Printf("\nBeam's Java ValidatesRunner suite, a fresh server per pipeline, %d test JVMs\n\n", *forks)
	bench.WriteSuiteComparison(os.Stdout, bench.CompareSuites(runs[0], runs[1]))
	after := leftStores()
	fmt.Printf("\njob stores in the cache and temp directories: %d before, %d after\n", len(before), len(after))
	for _, s := range after {
		fmt.Println("-", s)
	}
	return nil
}

// runSuite runs the suite on one runner's binary and reads its reports.
func runSuite(root, work, runner string) (bench.SuiteRun, error) {
	build := filepath.Join(work, "mvn-"+runner)
	reports := filepath.Join(build, "surefire-reports")
	if err := os.RemoveAll(reports); err != nil {
		return bench.SuiteRun{}, err
	}
	args := []string{"-B", "-o", "-q", "-f", filepath.Join(root, "validates/java/pom.xml"), "test",
		"-DbeamRunnerBinary=" + filepath.Join(work, "bin", runner), "-DbuildDir=" + build,
		fmt.Sprintf("-DforkCount=%d", *forks), fmt.Sprintf("-DtestTimeoutSeconds=%d", int(timeout.Seconds())),
		"-Dmaven.test.failure.ignore=true"}
	if *tests != "" {
		args = append(args, "-Dtest="+*tests)
	}
	logPath := filepath.Join(work, "mvn-"+runner+".log")
	log, err := os.Create(logPath)
	if err != nil {
		return bench.SuiteRun{}, err
	}
	defer log.Close()
	cmd := exec.CommandContext(context.Background(), "mvn", args...)
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = log, log
	fmt.Printf("javasuite: %s (log %s)\n", runner, logPath)
	start := time.Now()
	runErr := cmd.Run()
	wall := time.Since(start)
	res, err := validates.ReadSurefireReports(reports)
	if runErr != nil {
		return bench.SuiteRun{}, fmt.Errorf("mvn on %s: %v (log %s)", runner, runErr, logPath)
	}
	if err == nil && len(res) == 0 {
		err = fmt.Errorf("no test results in %s", reports)
	}
	return bench.SuiteRun{Runner: runner, Wall: wall, Results: res}, err
}

// leftStores lists beam-runner's job stores in the user's cache directory
// (servers before the footprint fix kept one per port there) and its
// temporary stores in the temp directory.
func leftStores() []string {
	var out []string
	if cache, err := os.UserCacheDir(); err == nil {
		m, _ := filepath.Glob(filepath.Join(cache, "beam-runner", "state", "*"))
		out = append(out, m...)
	}
	m, _ := filepath.Glob(filepath.Join(os.TempDir(), "beam-runner-state-*"))
	for _, p := range m {
		if !strings.HasSuffix(p, ".lock") {
			out = append(out, p)
		}
	}
	return out
}
