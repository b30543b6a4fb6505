// Package diskstall is a disk that takes its time, for tests: an errorfs
// injector that, once armed, holds every matching file operation until
// released, without a clock in the test.
package diskstall

import (
	"sync"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// Stall holds the operations Match accepts while armed. Stalled is closed
// when the first one is held; Release lets every held one, and all later
// ones, go on.
type Stall struct {
	Match    func(op errorfs.Op) bool
	Stalled  chan struct{}
	released chan struct{}

	mu     sync.Mutex
	armed  bool
	held   int
	once   sync.Once
	freeMu sync.Once
}

// New is a Stall of the operations match accepts; Wrap puts it on a file
// system.
func New(match func(op errorfs.Op) bool) *Stall {
	return &Stall{Match: match, Stalled: make(chan struct{}), released: make(chan struct{})}
}

// Wrap returns fs with s injected into its operations.
func (s *Stall) Wrap(fs vfs.FS) vfs.FS { return errorfs.Wrap(fs, s) }

// Arm starts holding matching operations.
func (s *Stall) Arm() { s.mu.Lock(); s.armed = true; s.mu.Unlock() }

// Release lets the held operations, and all later ones, go on.
func (s *Stall) Release() { s.freeMu.Do(func() { close(s.released) }) }

// Released reports whether Release was called.
func (s *Stall) Released() bool {
	select {
	case <-s.released:
		return true
	default:
		return false
	}
}

// Held is how many operations have been held so far.
func (s *Stall) Held() int { s.mu.Lock(); defer s.mu.Unlock(); return s.held }

// MaybeError implements errorfs.Injector.
func (s *Stall) MaybeError(op errorfs.Op) error {
	s.mu.Lock()
	hold := s.armed && !s.Released() && s.Match(op)
	if hold {
		s.held++
	}
	s.mu.Unlock()
	if hold {
		s.once.Do(func() { close(s.Stalled) })
		<-s.released
	}
	return nil
}

func (s *Stall) String() string { return "diskstall" }

// Writes matches every operation that writes a file, creates, renames or
// removes one, or syncs: all a stalled disk would hold.
func Writes(op errorfs.Op) bool {
	return op.Kind.ReadOrWrite() == errorfs.OpIsWrite
}
