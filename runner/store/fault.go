package store

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// ErrDiskFault is wrapped by every write refused after a disk fault.
var ErrDiskFault = errors.New("disk fault")

// faultFS passes every operation to the file system under it and keeps
// the first write that failed (a write, sync, create or rename of any of
// its Pebble instance's files). Pebble cannot go on writing after such a
// failure: its write-ahead log keeps the error, and a later commit either
// returns it through a fatal error or panics holding its locks. So once a
// fault is kept, no more writes are sent to that instance; they are
// refused with the fault. For the job records (Store) the server then
// goes on without durability until it is restarted; for a job's Scratch
// (scratch.go), that job's spill fails naming the cause.
type faultFS struct {
	vfs.FS
	fault   atomic.Pointer[error] // the first fault, naming the operation and file
	raw     atomic.Pointer[error] // that fault as the filesystem returned it to Pebble
	onFault func(error)           // called once, with the first fault
}

func newFaultFS(inner vfs.FS, onFault func(error)) *faultFS {
	return &faultFS{FS: inner, onFault: onFault}
}

// keep records err (op on path) as the fault if it is the first, and
// returns err unchanged for Pebble.
func (f *faultFS) keep(op, path string, err error) error {
	if err == nil {
		return nil
	}
	cause := err
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		cause = fmt.Errorf("%s %s: %w", op, path, err)
	}
	if f.fault.CompareAndSwap(nil, &cause) {
		f.raw.Store(&err)
		if f.onFault != nil {
			f.onFault(cause)
		}
	}
	return err
}

// caused reports whether err is, or wraps, the kept fault as Pebble got it.
func (f *faultFS) caused(err error) bool {
	p := f.raw.Load()
	return p != nil && errors.Is(err, *p)
}

// err is the kept fault, or nil.
func (f *faultFS) err() error {
	if p := f.fault.Load(); p != nil {
		return *p
	}
	return nil
}

func (f *faultFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	file, err := f.FS.Create(name, c)
	return f.wrap(file, name, "create", err)
}

func (f *faultFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	file, err := f.FS.OpenReadWrite(name, c, opts...)
	return f.wrap(file, name, "open for writing", err)
}

func (f *faultFS) ReuseForWrite(old, name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	file, err := f.FS.ReuseForWrite(old, name, c)
	return f.wrap(file, name, "reuse for writing", err)
}

// OpenDir's file is wrapped for its Sync, which makes renames and new
// files durable.
func (f *faultFS) OpenDir(name string) (vfs.File, error) {
	file, err := f.FS.OpenDir(name)
	return f.wrap(file, name, "open directory", err)
}

func (f *faultFS) Rename(old, name string) error {
	return f.keep("rename to", name, f.FS.Rename(old, name))
}

func (f *faultFS) Link(old, name string) error {
	return f.keep("link to", name, f.FS.Link(old, name))
}

func (f *faultFS) Unwrap() vfs.FS { return f.FS }

func (f *faultFS) wrap(file vfs.File, name, op string, err error) (vfs.File, error) {
	if err != nil {
		return nil, f.keep(op, name, err)
	}
	return &faultFile{File: file, fs: f, path: name}, nil
}

// faultFile keeps the failures of a writable file's writes and syncs.
// Preallocate is not watched: Pebble goes on without it.
type faultFile struct {
	vfs.File
	fs   *faultFS
	path string
}

func (f *faultFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	return n, f.fs.keep("write", f.path, err)
}

func (f *faultFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.File.WriteAt(p, off)
	return n, f.fs.keep("write", f.path, err)
}

func (f *faultFile) Sync() error { return f.fs.keep("sync", f.path, f.File.Sync()) }

func (f *faultFile) SyncData() error { return f.fs.keep("sync", f.path, f.File.SyncData()) }

func (f *faultFile) SyncTo(length int64) (bool, error) {
	full, err := f.File.SyncTo(length)
	return full, f.fs.keep("sync", f.path, err)
}

// Close can report a write the OS deferred.
func (f *faultFile) Close() error { return f.fs.keep("close", f.path, f.File.Close()) }

// faulted is the faultFS's report of the store's first disk fault.
func (s *Store) faulted(cause error) {
	s.log.Error("store: disk fault; the store takes no more writes until the server restarts",
		"state_dir", s.dir, "err", cause)
}

// writable is nil, or the error every write gets after a disk fault.
func (s *Store) writable() error {
	if cause := s.fs.err(); cause != nil {
		return fmt.Errorf("store in state dir %s takes no more writes after a %w (restart the server once the disk is fixed): %w", s.dir, ErrDiskFault, cause)
	}
	return nil
}

// apply commits b unless the store has had a disk fault. A commit whose
// write-ahead log write or sync failed ends in Pebble's fatal error,
// which pebbleLogger.Fatalf recognises by its cause (the fault the
// store's filesystem kept) and raises as a commitFailure; apply turns it
// into the commit's error. Pebble has released its commit locks by then;
// no other panic is caught.
func (s *Store) apply(b *pebble.Batch, opts *pebble.WriteOptions) (err error) {
	if err := s.writable(); err != nil {
		return err
	}
	defer func() {
		if r := recover(); r != nil {
			cf, ok := r.(commitFailure)
			if !ok {
				panic(r)
			}
			s.fs.keep("commit", "the write-ahead log", cf.err)
			err = s.writable()
		}
	}()
	return s.db.Apply(b, opts)
}

// commitFailure carries Pebble's fatal commit error to apply.
type commitFailure struct{ err error }

// pebbleLogger sends Pebble's logs to slog: its chatter at debug level.
// fs is the instance's filesystem: a fatal error caused by a fault it kept
// is that fault, not a bug of Pebble's.
type pebbleLogger struct {
	log *slog.Logger
	fs  *faultFS
}

func (l pebbleLogger) Infof(format string, args ...any) {
	l.log.Debug("store: " + fmt.Sprintf(format, args...))
}

func (l pebbleLogger) Errorf(format string, args ...any) {
	l.log.Warn("store: " + fmt.Sprintf(format, args...))
}

// Fatalf is called on unrecoverable errors; Pebble requires that it not
// return. One caused by a kept disk fault is raised as a commitFailure:
// Pebble's only such call is a failed commit's, in the goroutine of
// apply, which recovers it (were another to come from a background
// goroutine, the panic would end the process, as an exit would).
// Anything else ends the process.
func (l pebbleLogger) Fatalf(format string, args ...any) {
	for _, a := range args {
		if err, ok := a.(error); ok && l.fs != nil && l.fs.caused(err) {
			panic(commitFailure{err})
		}
	}
	l.log.Error("store: fatal: " + fmt.Sprintf(format, args...))
	os.Exit(1)
}
