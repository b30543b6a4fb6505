package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/beam-runner/beam-runner/testsupport/serverproc"
	"github.com/beam-runner/beam-runner/validates"
)

// goCmd runs the go tool in the current directory (the repository root, so
// our go.mod pins Beam's version), streaming its output.
func goCmd(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %v: %w", args, err)
	}
	return nil
}

// goRun runs Beam's Go integration test binary against one job server.
type goRun struct {
	bin, endpoint, work string
	timeout             time.Duration
	extra               []string // more flags for the tests
}

// run executes the tests matching runRE (minus skipRE) and returns their
// results. The binary's exit status is ignored: failures are read per test,
// and a crash shows up as tests that are incomplete or did not run.
func (g goRun) run(ctx context.Context, label, runRE, skipRE string) []validates.Result {
	raw, err := os.Create(filepath.Join(g.work, "go-"+label+".json"))
	if err != nil {
		fmt.Println("validates:", err)
		return nil
	}
	defer raw.Close()
	// The binary's own -test.timeout should fire first and dump stacks; the
	// context is a backstop, and is also cancelled if the server dies.
	ctx, cancel := context.WithTimeout(ctx, g.timeout+time.Minute)
	defer cancel()
	results, err := g.stream(ctx, g.args(runRE, skipRE), raw)
	if err != nil {
		fmt.Printf("validates: Go %s tests: %v\n", label, err)
	}
	return results
}

func (g goRun) args(runRE, skipRE string) []string {
	args := []string{
		"-test.v=test2json", "-test.run", runRE, "-test.timeout", g.timeout.String(),
		"--runner=universal", "--endpoint=" + g.endpoint, "--environment_type=LOOPBACK",
	}
	if skipRE != "" {
		args = append(args, "-test.skip", skipRE)
	}
	return append(args, g.extra...)
}

// stream runs the test binary with its output piped into `go tool test2json`
// and parses the events, echoing test output live and saving them to raw.
// The two are separate processes so that killing the tests (on ctx) still
// lets test2json flush what ran, marking the interrupted test incomplete.
func (g goRun) stream(ctx context.Context, args []string, raw io.Writer) ([]validates.Result, error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	conv := exec.Command("go", "tool", "test2json", "-t", "-p", "primitives")
	conv.Stdin, conv.Stderr = pr, os.Stderr
	out, err := conv.StdoutPipe()
	if err != nil {
		return nil, err
	}
	test := serverproc.GroupCommand(ctx, g.bin, args...)
	test.Stdout, test.Stderr = pw, pw
	if err := startBoth(conv, test, pr, pw); err != nil {
		return nil, err
	}
	results, perr := validates.ParseTest2JSON(io.TeeReader(out, raw), os.Stdout)
	terr := test.Wait()
	conv.Wait()
	if perr != nil {
		return results, perr
	}
	if terr != nil {
		return results, fmt.Errorf("test binary: %w (see per-test results)", terr)
	}
	return results, nil
}

// startBoth starts the converter then the tests, and closes this process's
// pipe ends so the converter sees EOF exactly when the tests exit.
func startBoth(conv, test *exec.Cmd, pr, pw *os.File) error {
	defer pr.Close()
	defer pw.Close()
	if err := conv.Start(); err != nil {
		return err
	}
	if err := test.Start(); err != nil {
		pw.Close()
		conv.Wait()
		return err
	}
	return nil
}
