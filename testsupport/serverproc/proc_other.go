//go:build !linux

package serverproc

import "os/exec"

// Outside Linux there are no process groups here: only the child itself
// is signalled.

// OwnGroup does nothing outside Linux.
func OwnGroup(cmd *exec.Cmd) {}

// TermGroup ends the child.
func TermGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}

// KillGroup ends the child.
func KillGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	return cmd.Process.Kill()
}
