//go:build !linux

package main

import "os/exec"

// Outside Linux there is no process-group handling: only the child itself
// is signalled.
func setProcAttrs(cmd *exec.Cmd) {}

func terminate(cmd *exec.Cmd) {
	if cmd.Process != nil {
		cmd.Process.Kill()
	}
}

func killGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	return cmd.Process.Kill()
}
