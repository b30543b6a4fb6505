package execute

import (
	"io"
	"strings"
	"sync"
)

// signalOn is a log writer that closes ch at the first line containing
// every one of want, so a test waits for what the runner logs instead of
// a clock.
func signalOn(ch chan struct{}, want ...string) io.Writer {
	return &logSignal{want: want, ch: ch}
}

type logSignal struct {
	want []string
	ch   chan struct{}
	once sync.Once
}

func (l *logSignal) Write(b []byte) (int, error) {
	line := string(b)
	for _, w := range l.want {
		if !strings.Contains(line, w) {
			return len(b), nil
		}
	}
	l.once.Do(func() { close(l.ch) })
	return len(b), nil
}
