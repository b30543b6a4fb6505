// Package ownerdir answers the two questions before a server removes a
// directory that another server left in the temp dir: is it this user's,
// and is the process that made it gone.
package ownerdir

import (
	"errors"
	"os"
	"syscall"
)

// OwnedByMe: dir is a directory (not a link) of this user.
func OwnedByMe(dir string) bool {
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}

// ProcessGone: no process has pid. A process that exists but is not ours
// (signal 0 answers EPERM) still runs.
func ProcessGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
