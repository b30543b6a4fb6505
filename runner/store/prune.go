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

// DefaultRetention is how long a default store no server has used is
// kept. Servers started on throwaway ports (Python's PrismRunner picks a
// free port for each run) would otherwise leave a store behind each.
const DefaultRetention = 7 * 24 * time.Hour

// PruneDefaultDirs removes the default stores (port-N beside keep) that no
// server holds and that nothing has written to for olderThan: a server
// restarted on such a port after that long starts empty. It returns the
// directories it removed; one it cannot inspect or remove is left alone.
func PruneDefaultDirs(keep string, olderThan time.Duration, now time.Time, log *slog.Logger) []string {
	if log == nil {
		log = slog.Default()
	}
	parent := filepath.Dir(keep)
	entries, err := os.ReadDir(parent)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range entries {
		dir := filepath.Join(parent, e.Name())
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "port-") || dir == keep {
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
		log.Warn("removing an unused default state dir", "state_dir", dir, "err", err)
		return false
	}
	log.Info("removed a default state dir unused since "+newest.Format(time.DateOnly), "state_dir", dir)
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
