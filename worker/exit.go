package worker

import (
	"bytes"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"syscall"
)

// Reporter is implemented by handles that can say how their harness ended
// and what it last wrote (PROCESS and DOCKER; an EXTERNAL pool's workers
// are not the runner's children).
type Reporter interface {
	// Exit describes how the harness ended ("exited with signal 9
	// (killed)"), or "" while it runs.
	Exit() string
	// Output is the last lines the harness wrote to stdout and stderr.
	Output() []string
}

// describeExit turns cmd.Wait's error into words.
func describeExit(err error) string {
	if err == nil {
		return "exited with status 0"
	}
	ee, ok := err.(*exec.ExitError)
	if !ok {
		return "ended: " + err.Error()
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return fmt.Sprintf("exited with signal %d (%v)", int(ws.Signal()), ws.Signal())
	}
	return fmt.Sprintf("exited with status %d", ee.ExitCode())
}

// tailLines keeps the last n lines written to it, passing every write on
// to an underlying writer (the runner's stderr).
type tailLines struct {
	next io.Writer
	n    int

	mu      sync.Mutex
	lines   []string
	partial []byte
}

func newTail(next io.Writer, n int) *tailLines { return &tailLines{next: next, n: n} }

func (t *tailLines) Write(p []byte) (int, error) {
	t.mu.Lock()
	t.partial = append(t.partial, p...)
	for {
		i := bytes.IndexByte(t.partial, '\n')
		if i < 0 {
			break
		}
		t.push(string(t.partial[:i]))
		t.partial = t.partial[i+1:]
	}
	if len(t.partial) > 4096 { // a runaway line: keep what we have
		t.push(string(t.partial))
		t.partial = nil
	}
	t.mu.Unlock()
	if t.next != nil {
		t.next.Write(p)
	}
	return len(p), nil
}

func (t *tailLines) push(line string) {
	t.lines = append(t.lines, line)
	if len(t.lines) > t.n {
		t.lines = append(t.lines[:0], t.lines[len(t.lines)-t.n:]...)
	}
}

// Lines returns the kept lines, oldest first, including an unfinished one.
func (t *tailLines) Lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := append([]string(nil), t.lines...)
	if len(t.partial) > 0 {
		out = append(out, string(t.partial))
	}
	return out
}
