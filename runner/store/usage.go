package store

import (
	"context"
	"errors"
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

// Usage reads Pebble's counters of the files of the job records'
// instance and of every open Scratch (a removed one has given its space
// back): nothing walks the state dir, so the web UI and /metrics, which
// ask often, never wait on a large or slow one.
func (s *Store) Usage() (Usage, error) {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return Usage{}, ErrClosed
	}
	u := Usage{Jobs: int64(s.db.Metrics().DiskSpaceUsage())}
	s.mu.RUnlock()
	s.smu.Lock() // as in removeScratches: Size takes each Scratch's own lock

	open := make([]*Scratch, 0, len(s.scratches))
	for x := range s.scratches {
		open = append(open, x)
	}
	s.smu.Unlock()
	for _, x := range open {
		// One that met a disk fault is closed, its job failing: its
		// files go with it, so it counts as nothing.
		if n, err := x.Size(); err == nil {
			u.Scratch += n
		}
	}
	return u, nil
}
