package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

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
}

// run executes the tests matching runRE (minus skipRE) and returns their
// results. The binary's exit status is ignored: failures are read per test,
// and a crash shows up as tests that are incomplete or did not run.
func (g goRun) run(ctx context.Context, label, runRE, skipRE string) []validates.Result {
	args := g.args(runRE, skipRE)
	// test2json -t converts the -test.v=test2json stream to JSON events,
	// exactly, including tests interrupted by -test.timeout.
	// The binary's own -test.timeout should fire first and dump stacks; the
	// context is a backstop that kills the whole process group.
	ctx, cancel := context.WithTimeout(ctx, g.timeout+time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", append([]string{"tool", "test2json", "-t", "-p", "primitives", g.bin}, args...)...)
	setProcAttrs(cmd)
	cmd.Cancel = func() error { return killGroup(cmd) }
	raw, err := os.Create(filepath.Join(g.work, "go-"+label+".json"))
	if err != nil {
		fmt.Println("validates:", err)
		return nil
	}
	defer raw.Close()
	results, err := g.stream(cmd, raw)
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
	return args
}

// stream starts cmd and parses its events, echoing test output live and
// saving the raw events to raw.
func (g goRun) stream(cmd *exec.Cmd, raw io.Writer) ([]validates.Result, error) {
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	results, perr := validates.ParseTest2JSON(io.TeeReader(out, raw), os.Stdout)
	werr := cmd.Wait()
	if perr != nil {
		return results, perr
	}
	if werr != nil {
		return results, fmt.Errorf("test binary: %w (see per-test results)", werr)
	}
	return results, nil
}
