package main

import (
	"os/exec"
	"syscall"
)

// setProcAttrs puts children in their own process group, so a whole test
// tree can be killed, and has Linux kill them if the harness dies first, so
// an interrupted CI run leaves no server behind.
func setProcAttrs(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// terminate sends SIGTERM to the child's process group.
func terminate(cmd *exec.Cmd) {
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	}
}

// killGroup sends SIGKILL to the child's process group.
func killGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
