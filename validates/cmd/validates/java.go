package main

import (
	"archive/zip"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/beam-runner/beam-runner/testsupport/serverproc"
	"github.com/beam-runner/beam-runner/validates"
)

// Beam's Java ValidatesRunner suite: the ValidatesRunner tests of
// beam-sdks-java-core's tests jar, unmodified, run by Maven Surefire in
// validates/java (offline: setup filled ~/.m2) on the harness's server
// through that project's Job API client, with a LOOPBACK Java harness.
// validates/expected_java.txt lists the Class/method names that must pass.
// Beam's tests beyond that category (NeedsRunner) run only as listed in
// validates/expected_java_needsrunner.txt, in the same Maven invocation
// (the pom's needs-runner profile), and each must pass too.
const (
	javaCheck      = "java/validatesrunner"
	javaExpected   = "validates/expected_java.txt"
	javaNRCheck    = "java/needsrunner"
	javaNRExpected = "validates/expected_java_needsrunner.txt"
	javaProject    = "validates/java"
	// The jar Surefire scans; classes.txt must name each of its classes
	// that carry the category.
	javaTestsJar = "org/apache/beam/beam-sdks-java-core/2.73.0/beam-sdks-java-core-2.73.0-tests.jar"
	// The pinned Beam (go.mod), whose Java test sources are in its Go
	// module; the pom's beam-test-sources profile compiles from there the
	// file below, which shadows the 2.73.0 tests jar's FileIOTest (2.73's
	// testMatchWatchForNewFiles gives up 1 s after a new file, 2.77's 10 s).
	beamModule     = "github.com/apache/beam/sdks/v2"
	beamJavaTests  = "java/core/src/test/java"
	beamPinnedTest = "org/apache/beam/sdk/io/FileIOTest.java"
)

// javaRun is what one Maven invocation runs: the ValidatesRunner category
// (vr) and the listed NeedsRunner tests (nr), each with its expected names.
type javaRun struct {
	vr, nr         bool
	vrWant, nrWant []string
}

// runJava runs the enabled Java checks and records them.
func runJava(ctx context.Context, cfg config, work, endpoint string, rep *report) {
	jr, err := javaLists(cfg)
	if err != nil {
		rep.problems = append(rep.problems, err.Error())
		return
	}
	if !jr.vr && !jr.nr {
		return
	}
	timed("Java suite", func() error {
		if jr.vr {
			if err := checkJavaIncludes(); err != nil {
				rep.addChecks(javaCheck, nil, jr.vrWant, err)
				return err
			}
		}
		jctx, cancel := context.WithTimeout(ctx, cfg.javaTimeout)
		defer cancel()
		build := filepath.Join(work, "java")
		reports := filepath.Join(build, "surefire-reports")
		runErr := runMaven(jctx, cfg, work, endpoint, build, jr)
		errs := []error{runErr}
		for _, c := range []struct {
			ran        bool
			label, dir string
			want       []string
		}{{jr.vr, javaCheck, reports, jr.vrWant}, {jr.nr, javaNRCheck, reports + "-needsrunner", jr.nrWant}} {
			if c.ran {
				res, err := readReports(c.dir)
				rep.addChecks(c.label, res, c.want, errors.Join(runErr, err))
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	})
}

// javaLists reads the expected lists of the enabled Java checks; the
// NeedsRunner run happens only if its list names tests.
func javaLists(cfg config) (javaRun, error) {
	jr := javaRun{vr: !cfg.disabled[javaCheck], nr: !cfg.disabled[javaNRCheck]}
	var err error
	if jr.vr {
		if jr.vrWant, err = readJavaList(javaExpected); err != nil {
			return jr, err
		}
	}
	if jr.nr {
		if jr.nrWant, err = readJavaList(javaNRExpected); err != nil {
			return jr, err
		}
		jr.nr = len(jr.nrWant) > 0
	}
	return jr, nil
}

// runMaven runs Surefire against endpoint, writing under build: the
// category run's reports in surefire-reports, the listed NeedsRunner
// tests' in surefire-reports-needsrunner (the pom's needs-runner profile).
// Test failures do not fail Maven (they are read per test); a non-zero
// exit means the build itself failed.
func runMaven(ctx context.Context, cfg config, work, endpoint, build string, jr javaRun) error {
	for _, dir := range []string{"surefire-reports", "surefire-reports-needsrunner"} {
		if err := os.RemoveAll(filepath.Join(build, dir)); err != nil { // stale reports must not count
			return err
		}
	}
	tests, err := beamJavaTestsDir(ctx)
	if err != nil {
		return err
	}
	logPath := filepath.Join(work, "java-mvn.log")
	log, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer log.Close()
	args := []string{"-B", "-o", "-q", "-f", filepath.Join(javaProject, "pom.xml"), "test",
		"-DjobEndpoint=" + endpoint, "-DbuildDir=" + build, "-DbeamJavaTests=" + tests,
		fmt.Sprintf("-DforkCount=%d", cfg.javaForks),
		fmt.Sprintf("-DtestTimeoutSeconds=%d", int(cfg.javaTestTimeout.Seconds())),
		"-Dmaven.test.failure.ignore=true"}
	if !jr.vr {
		args = append(args, "-DskipValidatesRunner=true")
	}
	if jr.nr {
		args = append(args, "-DneedsRunnerTests="+validates.SurefireTests(jr.nrWant))
	}
	cmd := serverproc.GroupCommand(ctx, "mvn", args...)
	cmd.Stdout, cmd.Stderr = log, log
	fmt.Printf("validates: mvn test against %s (log %s, reports under %s)\n", endpoint, logPath, build)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("mvn: %w\n--- %s ---\n%s", err, logPath, tailFile(logPath, 30))
	}
	return nil
}

// beamJavaTestsDir is the pinned Beam's Java test source tree in the Go
// module cache. Maven's copy of the file silently copies nothing when it
// is missing (and 2.73.0's class would run instead): checked here.
func beamJavaTestsDir(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", beamModule).Output()
	if err != nil {
		return "", fmt.Errorf("go list -m %s: %w", beamModule, err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" {
		return "", fmt.Errorf("%s is not in the module cache (go mod download %s)", beamModule, beamModule)
	}
	dir := filepath.Join(mod, filepath.FromSlash(beamJavaTests))
	if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(beamPinnedTest))); err != nil {
		return "", err
	}
	return dir, nil
}

// readReports reads one Surefire run's reports, which must name some test.
func readReports(dir string) ([]validates.Result, error) {
	res, err := validates.ReadSurefireReports(dir)
	if err == nil && len(res) == 0 {
		err = fmt.Errorf("no test results in %s", dir)
	}
	return res, err
}

// checkJavaIncludes fails when the tests jar has a ValidatesRunner class
// that validates/java/classes.txt leaves out: Surefire would skip it.
func checkJavaIncludes() error {
	home, err := os.UserHomeDir()
	if err != nil {
		return err
	}
	jarPath := filepath.Join(home, ".m2", "repository", javaTestsJar)
	jar, err := zip.OpenReader(jarPath)
	if err != nil {
		return fmt.Errorf("%w (scripts/setup.sh fetches it)", err)
	}
	defer jar.Close()
	classes, err := validates.ValidatesRunnerClasses(&jar.Reader)
	if err != nil {
		return fmt.Errorf("%s: %w", jarPath, err)
	}
	includes, err := os.Open(filepath.Join(javaProject, "classes.txt"))
	if err != nil {
		return err
	}
	defer includes.Close()
	missing, err := validates.MissingIncludes(includes, classes)
	if err == nil && len(missing) > 0 {
		err = fmt.Errorf("%s/classes.txt misses ValidatesRunner classes of %s: %s",
			javaProject, jarPath, strings.Join(missing, " "))
	}
	return err
}

func readJavaList(path string) ([]string, error) {
	return readListWith(path, validates.ParseJavaClassList)
}
