package serverproc

import (
	"os/exec"
	"syscall"
)

// OwnGroup puts cmd in a process group of its own, so that the whole tree
// it starts can be signalled, and has Linux kill it if its parent dies
// first, so an interrupted run leaves no server behind.
func OwnGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// TermGroup sends SIGTERM to cmd's process group.
func TermGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	}
}

// KillGroup sends SIGKILL to cmd's process group.
func KillGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
