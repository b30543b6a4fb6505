package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// ClientRun is one execution of a pipeline program.
type ClientRun struct {
	Wall      time.Duration // from exec to exit: submission, run and teardown
	PeakRSSKB int64         // the program's own peak RSS (its LOOPBACK workers live in it)
	Output    string        // stdout and stderr, for metric parsing and errors
	Err       error
}

// RunClient runs bin with args and waits for it, up to timeout. Its output
// goes to logPath too, so a failure can be read in full afterwards.
func RunClient(ctx context.Context, bin string, args []string, logPath string, timeout time.Duration) ClientRun {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	logf, err := os.Create(logPath)
	if err != nil {
		return ClientRun{Err: err}
	}
	defer logf.Close()
	var buf bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout = io.MultiWriter(&buf, logf)
	cmd.Stderr = cmd.Stdout
	start := time.Now()
	err = cmd.Run()
	r := ClientRun{Wall: time.Since(start), Output: buf.String(), PeakRSSKB: maxRSSKB(cmd.ProcessState)}
	if ctx.Err() == context.DeadlineExceeded {
		err = fmt.Errorf("timed out after %v", timeout)
	}
	if err != nil {
		r.Err = fmt.Errorf("%v: %s", err, ErrorExcerpt(r.Output))
	}
	return r
}

// maxRSSKB is the child's peak RSS from its rusage; Linux reports KiB.
func maxRSSKB(ps *os.ProcessState) int64 {
	if ps == nil {
		return 0
	}
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss
	}
	return 0
}
