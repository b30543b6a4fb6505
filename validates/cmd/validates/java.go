package main

import (
	"archive/zip"
	"context"
	"fmt"
	"os"
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
const (
	javaCheck    = "java/validatesrunner"
	javaExpected = "validates/expected_java.txt"
	javaProject  = "validates/java"
	// The jar Surefire scans; classes.txt must name each of its classes
	// that carry the category.
	javaTestsJar = "org/apache/beam/beam-sdks-java-core/2.73.0/beam-sdks-java-core-2.73.0-tests.jar"
)

// runJava runs the suite unless disabled and records it.
func runJava(ctx context.Context, cfg config, work, endpoint string, rep *report) {
	if cfg.disabled[javaCheck] {
		return
	}
	expected, err := readJavaList(javaExpected)
	if err != nil {
		rep.problems = append(rep.problems, err.Error())
		return
	}
	timed("Java ValidatesRunner suite", func() error {
		if err := checkJavaIncludes(); err != nil {
			rep.addChecks(javaCheck, nil, expected, err)
			return err
		}
		jctx, cancel := context.WithTimeout(ctx, cfg.javaTimeout)
		defer cancel()
		res, err := runMaven(jctx, cfg, work, endpoint)
		rep.addChecks(javaCheck, res, expected, err)
		return err
	})
}

// runMaven runs Surefire against endpoint and reads its JUnit reports.
// Test failures do not fail Maven (they are read per test); a non-zero exit
// means the build itself failed.
func runMaven(ctx context.Context, cfg config, work, endpoint string) ([]validates.Result, error) {
	build := filepath.Join(work, "java")
	reports := filepath.Join(build, "surefire-reports")
	if err := os.RemoveAll(reports); err != nil { // stale reports must not count
		return nil, err
	}
	logPath := filepath.Join(work, "java-mvn.log")
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	cmd := serverproc.GroupCommand(ctx, "mvn", "-B", "-o", "-q",
		"-f", filepath.Join(javaProject, "pom.xml"), "test",
		"-DjobEndpoint="+endpoint, "-DbuildDir="+build,
		fmt.Sprintf("-DforkCount=%d", cfg.javaForks),
		fmt.Sprintf("-DtestTimeoutSeconds=%d", int(cfg.javaTestTimeout.Seconds())),
		"-Dmaven.test.failure.ignore=true")
	cmd.Stdout, cmd.Stderr = log, log
	fmt.Printf("validates: mvn test against %s (log %s, reports %s)\n", endpoint, logPath, reports)
	runErr := cmd.Run()
	res, err := validates.ReadSurefireReports(reports)
	if runErr != nil {
		return res, fmt.Errorf("mvn: %w\n--- %s ---\n%s", runErr, logPath, tailFile(logPath, 30))
	}
	if err == nil && len(res) == 0 {
		err = fmt.Errorf("no test results in %s", reports)
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
