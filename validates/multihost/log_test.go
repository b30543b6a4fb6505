//go:build multihost

package multihost

import (
	"github.com/beam-runner/beam-runner/testsupport/syncbuf"
	"io"
)

// teeWriter writes to both.
type teeWriter struct {
	a io.Writer
	b *syncbuf.Buffer
}

func (w teeWriter) Write(p []byte) (int, error) {
	w.b.Write(p)
	return w.a.Write(p)
}
