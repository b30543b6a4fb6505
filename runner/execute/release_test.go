package execute

import (
	"math"
	"runtime/debug"
	"testing"
	"time"

	"github.com/beam-runner/beam-runner/testsupport/testwait"
)

func TestWorthReleasing(t *testing.T) {
	for _, tc := range []struct {
		garbage, free uint64
		want          bool
	}{
		{0, 0, false},
		{1 << 20, 2 << 20, false}, // a tiny job's leftovers
		{releaseMin - 1, 0, false},
		{releaseMin, 0, true},
		{32 << 20, 32 << 20, true}, // garbage and free spans add up
		{0, 1 << 30, true},
	} {
		if got := worthReleasing(tc.garbage, tc.free); got != tc.want {
			t.Errorf("worthReleasing(%d, %d) = %v, want %v", tc.garbage, tc.free, got, tc.want)
		}
	}
}

// A job's dropped heap counts as releasable, and a release leaves
// nothing worth releasing again. Other tests' executors release memory
// after their jobs, and a memory limit set by an earlier test collects by
// itself: either can empty the heap between the allocation and the read,
// so each round that saw one is tried again.
func TestHeapReleasable(t *testing.T) {
	// A job an earlier test ran releases memory releaseDelay after it
	// ended (Execute); one doing so between the reads below would free
	// what the test drops.
	testwait.Until(t, time.Minute, "earlier jobs' memory releases", func() bool { return releasesPending.Load() == 0 })
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // no collection between the reads
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	var g, f uint64
	for round := 0; round < 5; round++ {
		debug.FreeOSMemory()
		if g, f := heapReleasable(); worthReleasing(g, f) {
			t.Fatalf("just after a release: garbage %d, free %d; want less than %d", g, f, releaseMin)
		}
		sink = make([]byte, 2*releaseMin)
		sink = nil
		if g, f = heapReleasable(); worthReleasing(g, f) {
			return
		}
	}
	t.Errorf("after dropping %d bytes: garbage %d, free %d; want at least %d", 2*releaseMin, g, f, releaseMin)
}

// sink keeps the test's allocation from being optimised away.
var sink []byte
