package store

import (
	"bytes"
	"fmt"
	"syscall"

	"github.com/dustin/go-humanize"
)

// Space is a key prefix of the store used as scratch space, such as a
// GroupByKey's spilled runs (it implements agg.Spill). Its writes are not
// synced: scratch is worthless after a crash, and the owner drops it.
type Space struct {
	s      *Store
	prefix []byte
}

// Space returns the scratch space under prefix. Spaces whose prefixes do
// not prefix one another are disjoint.
func (s *Store) Space(prefix string) *Space { return &Space{s: s, prefix: []byte(prefix)} }

// WriteRun writes the pairs in one atomic batch. It refuses, with ENOSPC,
// a write that would leave less than the store's reserve free on the
// disk: Pebble cannot go on after a failed write (fault.go), so a disk
// that fills must fail the spilling job before it fails Pebble.
func (sp *Space) WriteRun(keys, values [][]byte) error {
	n := 0
	for i := range keys {
		n += len(sp.prefix) + len(keys[i]) + len(values[i])
	}
	if err := sp.s.roomFor(n); err != nil {
		return err
	}
	b := sp.s.NewBatch()
	k := make([]byte, 0, 64)
	for i := range keys {
		k = append(append(k[:0], sp.prefix...), keys[i]...)
		b.Set(k, values[i])
	}
	return b.Commit(false)
}

// sizeEvery is how many bytes may be spilled between two readings of the
// disk's free space: a sixteenth of the reserve, so that what is written
// between readings (with Pebble's write amplification) stays well within
// it.
func (s *Store) sizeEvery() int64 { return int64(max(s.reserve/16, 1)) }

// roomFor reads the disk's free space once every sizeEvery bytes and
// refuses n more bytes if they would leave less than the reserve. A file
// system that cannot tell its free space is not refused.
func (s *Store) roomFor(n int) error {
	if s.unsized.Add(int64(n)) < s.sizeEvery() {
		return nil
	}
	s.unsized.Store(0)
	u, err := s.fs.GetDiskUsage(s.dir)
	if err != nil || u.AvailBytes >= s.reserve+uint64(n) {
		return nil
	}
	s.unsized.Store(s.sizeEvery()) // read it again on the next write
	return fmt.Errorf("spilling to the store in state dir %s: %s free on its disk, less than the %s kept for job records: %w",
		s.dir, humanize.IBytes(u.AvailBytes), humanize.IBytes(s.reserve), syscall.ENOSPC)
}

// Scan calls fn for every key of the space with the prefix, in order,
// with the space's prefix removed.
func (sp *Space) Scan(prefix []byte, fn func(key, value []byte) error) error {
	full := append(bytes.Clone(sp.prefix), prefix...)
	return sp.s.Scan(full, func(k, v []byte) error { return fn(k[len(sp.prefix):], v) })
}

// DeletePrefix drops every key of the space with the prefix.
func (sp *Space) DeletePrefix(prefix []byte) error {
	b := sp.s.NewBatch()
	b.DeletePrefix(append(bytes.Clone(sp.prefix), prefix...))
	return b.Commit(false)
}
