//go:build !linux

package worker

import "os/exec"

// dieWithServer does nothing here: only Linux kills a process when its
// parent dies.
func dieWithServer(*exec.Cmd) {}
