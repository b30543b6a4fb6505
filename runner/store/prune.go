package store

import (
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// DefaultRetention is how long an old default store that no server has
// used is kept. Until servers without --state_dir kept nothing, each kept
// a store per job port in the user's cache dir, and servers started on
// throwaway ports (by Python's PrismRunner, Java's TestPrismRunner) left
// one behind each: those are removed once unused for this long, as their
// servers promised.
const DefaultRetention = 7 * 24 * time.Hour

// oldDefaultParent is where those per-port stores are:
// <user cache dir>/beam-runner/state/port-PORT.
func oldDefaultParent() (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(cache, "beam-runner", "state"), nil
}

// PruneOldDefaultDirs removes the old default stores (see
// DefaultRetention) that no server holds and nothing wrote to for
// olderThan, then their parent directories if that empties them, and
// returns the stores it removed.
func PruneOldDefaultDirs(olderThan time.Duration, now time.Time, log *slog.Logger) []string {
	parent, err := oldDefaultParent()
	if err != nil {
		return nil
	}
	removed := PruneDefaultDirs(parent, olderThan, now, log)
	if len(removed) > 0 && os.Remove(parent) == nil { // fails unless empty
		os.Remove(filepath.Dir(parent)) // beam-runner/, unless venvs are there
	}
	return removed
}

// PruneDefaultDirs removes the stores port-N in parent that no server
// holds and that nothing has written to for olderThan. It returns the
// directories it removed; one it cannot inspect or remove is left alone.
func PruneDefaultDirs(parent string, olderThan time.Duration, now time.Time, log *slog.Logger) []string {
	if log == nil {
		log = slog.Default()
	}
	entries, err := os.ReadDir(parent)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range entries {
		dir := filepath.Join(parent, e.Name())
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "port-") {
			continue
		}
		if pruneIfStale(dir, now.Add(-olderThan), log) {
			removed = append(removed, dir)
		}
	}
	return removed
}

// pruneIfStale removes dir if no server holds its lock and its newest file
// is older than cutoff.
func pruneIfStale(dir string, cutoff time.Time, log *slog.Logger) bool {
	newest, err := newestModTime(dir)
	if err != nil || newest.After(cutoff) {
		return false
	}
	lock, err := pebble.LockDirectory(dir, vfs.Default)
	if err != nil {
		return false // a live server has it open
	}
	defer lock.Close()
	if err := os.RemoveAll(dir); err != nil {
		log.Warn("removing an old, unused default state dir", "state_dir", dir, "err", err)
		return false
	}
	log.Info("removed an old default state dir unused since "+newest.Format(time.DateOnly), "state_dir", dir)
	return true
}

func newestModTime(dir string) (time.Time, error) {
	var newest time.Time
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.ModTime().After(newest) {
			newest = info.ModTime()
		}
		return nil
	})
	return newest, err
}
