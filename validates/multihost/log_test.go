//go:build multihost

package multihost

import (
	"io"
	"strings"
	"sync"
)

// syncBuf keeps the server's log for the test to read.
type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// teeWriter writes to both.
type teeWriter struct {
	a io.Writer
	b *syncBuf
}

func (w teeWriter) Write(p []byte) (int, error) {
	w.b.Write(p)
	return w.a.Write(p)
}
