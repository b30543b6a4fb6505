package gctune

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/beam-runner/beam-runner/testsupport/testwait"
)

func TestLimit(t *testing.T) {
	for _, c := range []struct{ live, scan, ceiling, want int64 }{
		{0, 0, 0, Floor},
		{10 << 20, 1 << 20, 0, 10<<20 + Floor},
		{400 << 20, 10 << 20, 0, 500 << 20},
		{400 << 20, 300 << 20, 0, 700 << 20},
		{400 << 20, 10 << 20, 450 << 20, 450 << 20},
		{1 << 30, 0, 2 << 30, 1<<30 + 256<<20},
	} {
		if got := Limit(c.live, c.scan, c.ceiling); got != c.want {
			t.Errorf("Limit(%d, %d, %d) = %d, want %d", c.live, c.scan, c.ceiling, got, c.want)
		}
	}
}

// TestStartRetunes: after a collection the runtime's limit follows the
// live heap.
func TestStartRetunes(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	keep := make([]byte, 256<<20) // live, and noscan
	Start(0)
	testwait.NoErr(t, 10*time.Second, "the limit to follow the live heap", func() error {
		runtime.GC()
		if l := debug.SetMemoryLimit(-1); l < 256<<20 || l >= 400<<20 {
			return fmt.Errorf("limit %d after collections with 256 MiB live, want live plus a quarter", l)
		}
		return nil
	})
	runtime.KeepAlive(keep)
}
