package store

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// FormatVersion is the layout of keys and values this build reads and
// writes. A store written by a newer build is refused rather than misread.
const FormatVersion = 1

// formatKey holds the store's format version, in decimal.
var formatKey = []byte("\x00format")

// DefaultReserve is the free disk space spilling leaves for the job
// records (and Pebble's flushes and compactions of them).
const DefaultReserve = 256 << 20

// Option configures Open.
type Option func(*config)

type config struct {
	fs      vfs.FS
	reserve uint64
}

// WithFS opens the store on fs instead of the operating system's file
// system; tests pass Pebble's in-memory and fault-injecting ones.
func WithFS(fs vfs.FS) Option { return func(c *config) { c.fs = fs } }

// WithReserve sets the free disk space below which a Space refuses to
// write (DefaultReserve if not given).
func WithReserve(bytes uint64) Option { return func(c *config) { c.reserve = bytes } }

// Open opens (creating if needed) the store in dir. It fails with a clear
// message if another process has the directory open, if the store was
// written in a newer format than this build knows, or if a file of it is
// damaged; Open reads the whole store once to find out.
func Open(dir string, log *slog.Logger, opts ...Option) (*Store, error) {
	cfg := config{fs: vfs.Default, reserve: DefaultReserve}
	for _, o := range opts {
		o(&cfg)
	}
	if log == nil {
		log = slog.Default()
	}
	if err := cfg.fs.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("state dir %s: %w", dir, err)
	}
	lock, err := pebble.LockDirectory(dir, cfg.fs)
	if err != nil {
		return nil, fmt.Errorf("state dir %s %w (or cannot be locked: %v); stop that server or pass a different --state_dir", dir, ErrInUse, err)
	}
	s := &Store{dir: dir, lock: lock, log: log, reserve: cfg.reserve}
	s.reclaiming, s.stopReclaiming = context.WithCancel(context.Background())
	s.fs = newFaultFS(cfg.fs, s.faulted)
	s.unsized.Store(s.sizeEvery()) // the first spill write reads the free space
	s.db, err = pebble.Open(dir, &pebble.Options{FS: s.fs, Lock: lock, Logger: pebbleLogger{log, s.fs},
		EventListener: &pebble.EventListener{DataCorruption: s.noteCorruption}})
	if err != nil {
		lock.Close()
		return nil, s.damaged("opening the store", err)
	}
	if err := s.verify(); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.checkFormat(); err != nil {
		s.Close()
		return nil, err
	}
	if err := emptyScratch(s); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// verify reads every key and value once: Pebble checks each block it
// reads against its checksum, so a store damaged on disk is refused here,
// naming the file, instead of failing a job's read later.
func (s *Store) verify() error {
	it, err := s.db.NewIter(nil)
	if err != nil {
		return s.damaged("reading the store", err)
	}
	for it.First(); it.Valid(); it.Next() {
		if _, err = it.ValueAndErr(); err != nil {
			break
		}
	}
	if err == nil {
		err = it.Error()
	}
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return s.damaged("reading the store", err)
	}
	return nil
}

// noteCorruption keeps the damaged file Pebble found for the error of the
// read that found it (by default Pebble would end the process).
func (s *Store) noteCorruption(info pebble.DataCorruptionInfo) {
	path := info.Path
	s.corrupt.Store(&path)
	s.log.Error("store: a file is damaged", "state_dir", s.dir, "file", path, "details", info.Details.Error())
}

// damaged is Open's error for err, naming the damaged file when Pebble
// told one, and what to do.
func (s *Store) damaged(doing string, err error) error {
	file := ""
	if p := s.corrupt.Load(); p != nil {
		file = " (damaged file " + *p + ")"
	}
	first, _, _ := strings.Cut(err.Error(), "\n") // Pebble's errors carry detail lines
	return &damagedError{fmt.Sprintf("%s in state dir %s%s: %s; if the store is damaged, move the directory aside or pass another --state_dir",
		doing, s.dir, file, first), err}
}

// damagedError is an error of Open whose message is written for the user;
// it unwraps to Pebble's.
type damagedError struct {
	msg   string
	cause error
}

func (e *damagedError) Error() string { return e.msg }
func (e *damagedError) Unwrap() error { return e.cause }

// checkFormat stamps a new store with FormatVersion and refuses a store
// of a newer (or unreadable) format.
func (s *Store) checkFormat() error {
	v, ok, err := s.Get(formatKey)
	if err != nil {
		return s.damaged("reading the format version", err)
	}
	if !ok {
		b := s.NewBatch()
		b.Set(formatKey, []byte(strconv.Itoa(FormatVersion)))
		return b.Commit(true)
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
