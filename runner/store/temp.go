package store

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/beam-runner/beam-runner/internal/ownerdir"
)

// tempPattern starts the names of the temporary stores in the temp dir:
// beam-runner-state-PID-RANDOM.
const tempPattern = "beam-runner-state-"

// OpenTemp opens a store of this process alone, in a fresh private (0700)
// directory of the system's temp dir, for a server that keeps nothing
// once it exits: Close removes the directory. Such a store holds what a
// running job spills (Scratches), the way sort(1) spills to $TMPDIR.
//
// First it removes the temporary stores that servers killed before their
// Close left behind (ReclaimTemp), so crashes do not pile up.
func OpenTemp(log *slog.Logger, opts ...Option) (*Store, error) {
	if log == nil {
		log = slog.Default()
	}
	ReclaimTemp(os.TempDir(), log)
	dir, err := os.MkdirTemp("", tempPattern+strconv.Itoa(os.Getpid())+"-*")
	if err != nil {
		return nil, fmt.Errorf("creating a temporary store: %w", err)
	}
	s, err := Open(dir, log, opts...)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s.temp = true
	return s, nil
}

// ReclaimTemp removes the temporary stores in tmp (OpenTemp's) whose
// server is gone, and returns them. A store is removed only when all of
// these hold, so that no live server ever loses its store:
//   - it is this user's;
//   - the process its name carries no longer runs (this also covers the
//     moment between a server making the directory and locking it);
//   - its lock can be taken: no process, in this pid namespace or another
//     sharing the temp dir, has it open.
func ReclaimTemp(tmp string, log *slog.Logger) []string {
	if log == nil {
		log = slog.Default()
	}
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range entries {
		pid, ok := tempOwner(e.Name())
		dir := filepath.Join(tmp, e.Name())
		if !ok || !e.IsDir() || !ownerdir.OwnedByMe(dir) || !ownerdir.ProcessGone(pid) {
			continue
		}
		if removeUnlocked(dir, log) {
			removed = append(removed, dir)
		}
	}
	return removed
}

// tempOwner is the pid in a temporary store's directory name.
func tempOwner(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, tempPattern)
	if !ok {
		return 0, false
	}
	digits, _, ok := strings.Cut(rest, "-")
	pid, err := strconv.Atoi(digits)
	return pid, ok && err == nil && pid > 0
}

// removeUnlocked removes dir while holding its lock; a directory whose
// lock another process holds is left alone.
func removeUnlocked(dir string, log *slog.Logger) bool {
	lock, err := pebble.LockDirectory(dir, vfs.Default)
	if err != nil {
		return false
	}
	defer lock.Close()
	if err := os.RemoveAll(dir); err != nil {
		log.Warn("removing the temporary store of a server that is gone", "dir", dir, "err", err)
		return false
	}
	log.Debug("removed the temporary store of a server that is gone", "dir", dir)
	return true
}
