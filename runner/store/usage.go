package store

import (
	"context"
	"errors"
	"io/fs"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Reclaim compacts the keys with the prefix, so that the disk space of
// what a DeletePrefix dropped (a finished job's checkpoints) is given back
// now, not whenever Pebble's own compactions reach that range. It blocks
// until the compaction ends; the store's Close cancels it.
func (s *Store) Reclaim(prefix []byte) error {
	end := prefixEnd(prefix)
	if end == nil {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	if err := s.writable(); err != nil {
		return err
	}
	err := s.db.Compact(s.reclaiming, prefix, end, false)
	if errors.Is(err, context.Canceled) {
		return ErrClosed
	}
	return err
}

// Usage is the store's size on disk, in bytes, by part.
type Usage struct {
	Jobs    int64 `json:"jobs_bytes"`    // the job records' instance: records, checkpoints, its log
	Scratch int64 `json:"scratch_bytes"` // every Scratch: spilled GroupByKeys and bundle input
}

// Usage measures the files under the state dir. A file removed while it is
// measured (Pebble drops obsolete files at any time) counts as gone.
func (s *Store) Usage() (Usage, error) {
	var u Usage
	names, err := s.fs.List(s.dir)
	if err != nil {
		return u, err
	}
	for _, n := range names {
		size, err := pathSize(s.fs, s.fs.PathJoin(s.dir, n))
		if err != nil {
			return u, err
		}
		if n == scratchDir {
			u.Scratch += size
		} else {
			u.Jobs += size
		}
	}
	return u, nil
}

// pathSize is the size of the file at path, or of every file under the
// directory at path.
func pathSize(fsys vfs.FS, path string) (int64, error) {
	fi, err := fsys.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if !fi.IsDir() {
		return fi.Size(), nil
	}
	names, err := fsys.List(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var total int64
	for _, n := range names {
		size, err := pathSize(fsys, fsys.PathJoin(path, n))
		if err != nil {
			return 0, err
		}
		total += size
	}
	return total, nil
}
