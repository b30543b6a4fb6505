// Package store is beam-runner's one embedded, durable store: a Pebble
// (CockroachDB's LSM) database under --state_dir holding what must outlive
// the process. Pebble brings checksums, atomic batches and crash recovery;
// this package adds a format version and a small API so the rest of the
// runner never sees Pebble.
//
// Keys are byte strings; each user owns a prefix (job records live under
// "jobs/"). Keys starting with 0x00 are the store's own.
package store

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// FormatVersion is the layout of keys and values this build reads and
// writes. A store written by a newer build is refused rather than misread.
const FormatVersion = 1

// formatKey holds the store's format version, in decimal.
var formatKey = []byte("\x00format")

// Store is an open store. Its methods are safe for concurrent use.
type Store struct {
	dir  string
	db   *pebble.DB
	lock *pebble.Lock // held until Close, after the database closes

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

// DefaultDir is where a server keeps its store when --state_dir is not
// given: one directory per job port in the user's cache directory, so a
// server restarted on its port finds its jobs, and servers on different
// ports never contend for one directory's lock.
func DefaultDir(jobPort int) (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no default --state_dir: %w; pass --state_dir", err)
	}
	return filepath.Join(cache, "beam-runner", "state", "port-"+strconv.Itoa(jobPort)), nil
}

// Open opens (creating if needed) the store in dir. It fails with a clear
// message if another process has the directory open, or if the store was
// written in a newer format than this build knows.
func Open(dir string, log *slog.Logger) (*Store, error) {
	if log == nil {
		log = slog.Default()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("state dir %s: %w", dir, err)
	}
	lock, err := pebble.LockDirectory(dir, vfs.Default)
	if err != nil {
		return nil, fmt.Errorf("state dir %s %w (or cannot be locked: %v); stop that server or pass a different --state_dir", dir, ErrInUse, err)
	}
	db, err := pebble.Open(dir, &pebble.Options{Lock: lock, Logger: pebbleLogger{log}})
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("opening the store in state dir %s: %w", dir, err)
	}
	s := &Store{dir: dir, db: db, lock: lock}
	if err := s.checkFormat(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// checkFormat stamps a new store with FormatVersion and refuses a store
// of a newer (or unreadable) format.
func (s *Store) checkFormat() error {
	v, ok, err := s.Get(formatKey)
	if err != nil {
		return fmt.Errorf("state dir %s: reading the format version: %w", s.dir, err)
	}
	if !ok {
		return s.db.Set(formatKey, []byte(strconv.Itoa(FormatVersion)), pebble.Sync)
	}
	n, err := strconv.Atoi(string(v))
	switch {
	case err != nil:
		return fmt.Errorf("state dir %s holds a store with an unreadable format version %q; pass another --state_dir", s.dir, v)
	case n > FormatVersion:
		return fmt.Errorf("state dir %s holds a store of format %d, newer than this beam-runner's format %d; run a newer beam-runner or pass another --state_dir", s.dir, n, FormatVersion)
	}
	return nil
}

// Dir returns the store's directory.
func (s *Store) Dir() string { return s.dir }

// Close flushes and closes the store, releasing its directory.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.closed = true
	err := s.db.Close()
	if lerr := s.lock.Close(); err == nil {
		err = lerr
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
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
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
	return b.s.db.Apply(b.b, opts)
}

// pebbleLogger sends Pebble's logs to slog: its chatter at debug level.
type pebbleLogger struct{ log *slog.Logger }

func (l pebbleLogger) Infof(format string, args ...any) {
	l.log.Debug("store: " + fmt.Sprintf(format, args...))
}

func (l pebbleLogger) Errorf(format string, args ...any) {
	l.log.Warn("store: " + fmt.Sprintf(format, args...))
}

// Fatalf is called on unrecoverable corruption; Pebble requires that it
// not return.
func (l pebbleLogger) Fatalf(format string, args ...any) {
	l.log.Error("store: fatal: " + fmt.Sprintf(format, args...))
	os.Exit(1)
}

// WrittenBytes is how many bytes were written to the store since it was
// opened, for tests and measurements.
func (s *Store) WrittenBytes() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return 0
	}
	return s.db.Metrics().WAL.BytesIn
}
