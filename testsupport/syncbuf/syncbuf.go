// Package syncbuf is a text buffer that goroutines write to while a test
// reads it: a log sink for servers under test.
package syncbuf

import (
	"strings"
	"sync"
)

// Buffer is a strings.Builder safe for concurrent writers and readers.
type Buffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
