// Package store is beam-runner's one embedded, durable store: a Pebble
// (CockroachDB's LSM) database under --state_dir holding what must outlive
// the process. Pebble brings checksums, atomic batches and crash recovery;
// this package adds a format version, a small API so the rest of the
// runner never sees Pebble, and what Pebble leaves to its user on a
// failing disk (fault.go): writes stop with the cause instead of ending
// the process, and a damaged store is refused at Open naming the file.
// Scratch data (Spaces: spilled GroupByKeys and bundle input) lives apart,
// in an instance per job under <state_dir>/scratch, removed whole when the
// job ends (scratch.go); a job writes it through a queue a goroutine of
// the scratch's applies (queue.go), so its driver never waits on the disk.
//
// Keys are byte strings; each user owns a prefix (job records live under
// "jobs/"). Keys starting with 0x00 are the store's own.
package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
)

// Store is an open store. Its methods are safe for concurrent use.
type Store struct {
	dir  string
	fs   *faultFS
	db   *pebble.DB
	lock *pebble.Lock // held until Close, after the database closes
	log  *slog.Logger
	temp bool // OpenTemp's: Close removes dir

	corrupt atomic.Pointer[string] // the file Pebble last found damaged

	// Scratches (scratch.go) share the free-space reserve and its count.
	reserve uint64        // free disk space a spill write leaves (roomFor)
	unsized atomic.Int64  // bytes spilled since the free space was read
	spilled atomic.Uint64 // bytes spilled since Open, for WrittenBytes

	// smu guards the Scratches not yet removed, which Close removes.
	smu        sync.Mutex
	scratches  map[*Scratch]bool
	scratchSeq int
	shared     *Scratch // Space's, made on first use

	// reclaiming is cancelled by Close, to stop Reclaim's compactions.
	reclaiming     context.Context
	stopReclaiming context.CancelFunc

	// mu guards closed: Pebble panics on use after Close, and a job may
	// still report after the server closed its store; it gets ErrClosed.
	mu     sync.RWMutex
	closed bool
}

// ErrInUse is wrapped by Open's error when another process holds the
// directory.
var ErrInUse = errors.New("is in use by another beam-runner server")

// ErrClosed is returned by every operation after Close.
var ErrClosed = errors.New("store: closed")

// Dir returns the store's directory.
func (s *Store) Dir() string { return s.dir }

// Close flushes and closes the store, releasing its directory.
func (s *Store) Close() error {
	s.stopReclaiming()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.closed = true
	err := s.db.Close()
	err = errors.Join(err, s.removeScratches())
	if lerr := s.lock.Close(); err == nil {
		err = lerr
	}
	if s.temp {
		if rerr := os.RemoveAll(s.dir); err == nil && rerr != nil {
			err = fmt.Errorf("removing the temporary store %s: %w", s.dir, rerr)
		}
	}
	return err
}

// Get returns a copy of key's value; ok is false if the key is absent.
func (s *Store) Get(key []byte) (value []byte, ok bool, err error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, false, ErrClosed
	}
	v, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer closer.Close()
	return bytes.Clone(v), true, nil
}

// Scan calls fn for every key with the prefix, in key order. The slices
// are valid only during the call.
func (s *Store) Scan(prefix []byte, fn func(key, value []byte) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	return scan(s.db, prefix, fn)
}

func scan(db *pebble.DB, prefix []byte, fn func(key, value []byte) error) error {
	return scanReader(db, prefix, nil, fn)
}

// scanReader is scan over a database or a snapshot of one, from the
// first key at or after from (nil: the prefix's first).
func scanReader(db pebble.Reader, prefix, from []byte, fn func(key, value []byte) error) error {
	lower := prefix
	if bytes.Compare(from, prefix) > 0 {
		lower = from
	}
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return err
	}
	for it.First(); it.Valid(); it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			it.Close()
			return err
		}
		if err := fn(it.Key(), v); err != nil {
			it.Close()
			return err
		}
	}
	if err := it.Error(); err != nil {
		it.Close()
		return err
	}
	return it.Close()
}

// prefixEnd is the least key greater than every key with the prefix; nil
// (no bound) for a prefix of all 0xff bytes.
func prefixEnd(prefix []byte) []byte {
	end := bytes.Clone(prefix)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// Batch collects writes applied together, atomically, by Commit.
type Batch struct {
	s *Store
	b *pebble.Batch
}

// NewBatch starts an empty batch. Batches are independent of the
// database until Commit, so one may be built after Close; Commit fails.
func (s *Store) NewBatch() *Batch { return &Batch{s, new(pebble.Batch)} }

// Set records a write of key; both slices are copied.
func (b *Batch) Set(key, value []byte) { _ = b.b.Set(key, value, nil) }

// Delete records the deletion of key.
func (b *Batch) Delete(key []byte) { _ = b.b.Delete(key, nil) }

// DeletePrefix records the deletion of every key with the prefix.
func (b *Batch) DeletePrefix(prefix []byte) {
	if end := prefixEnd(prefix); end != nil {
		_ = b.b.DeleteRange(prefix, end, nil)
	}
}

// Commit applies the batch atomically. With sync, it returns once the
// writes are on disk (they survive power loss); without, once they are in
// the write-ahead log in the OS's hands (they survive the process dying).
func (b *Batch) Commit(sync bool) error {
	b.s.mu.RLock()
	defer b.s.mu.RUnlock()
	if b.s.closed {
		return ErrClosed
	}
	opts := pebble.NoSync
	if sync {
		opts = pebble.Sync
	}
	return b.s.apply(b.b, opts)
}

// WrittenBytes is how many bytes were written to the store (its records
// and its Spaces) since it was opened, for tests and measurements.
func (s *Store) WrittenBytes() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return 0
	}
	return s.db.Metrics().WAL.BytesIn + s.spilled.Load()
}
