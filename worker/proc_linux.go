package worker

import (
	"os/exec"
	"syscall"
)

// dieWithServer has Linux kill the worker when the server dies first
// (SIGKILL, or any crash): the server cannot stop it then, and a worker
// left behind keeps its memory and its connections. A Java harness
// outlives a lost control stream, still holding its Kafka producers,
// and the restarted server starts workers of its own. Go keeps the
// thread that started the worker alive (the server locks no goroutine
// to a thread), which the signal is tied to.
func dieWithServer(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
