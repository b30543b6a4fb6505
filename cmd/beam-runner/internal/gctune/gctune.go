// Package gctune keeps the server's heap close to what is live once it is
// large. Go's collector lets the heap grow to twice what is live before it
// runs; the runner's large heaps are mostly grouped data in byte chunks
// with no pointers (runner/engine/agg/runs.go), which cost the collector
// little to mark, so for them that doubling buys almost nothing and shows
// as twice the memory. After every collection the soft memory limit is set
// to what is live plus a quarter (at least Floor), under the ceiling; small
// heaps keep Go's default pacing, which is the tighter of the two there.
package gctune

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// Floor is the least headroom above the live heap, so a small heap is
// never collected more often than Go's own pacing would.
const Floor = 32 << 20

// Limit is the soft memory limit for a live heap of live bytes, scan of
// which the collector must scan (hold pointers), under ceiling (<= 0:
// none). A collection costs about what it scans, so a heap of many
// pointers keeps at least that much headroom, as Go's own pacing would.
func Limit(live, scan, ceiling int64) int64 {
	l := live + max(live/4, scan, Floor)
	if ceiling > 0 {
		l = min(l, ceiling)
	}
	return l
}

var once sync.Once

// Start tunes the limit after every collection from now on, under ceiling
// (<= 0: none). Later calls do nothing.
func Start(ceiling int64) {
	once.Do(func() {
		t := &tuner{ceiling: ceiling, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/scan/heap:bytes"}}}
		t.arm()
	})
}

type tuner struct {
	ceiling int64
	sample  []metrics.Sample
}

// arm leaves an object for the next collection to find unreachable: its
// cleanup runs after that collection, retunes and arms again.
func (t *tuner) arm() {
	s := new([16]byte)
	runtime.AddCleanup(s, func(t *tuner) { t.retune() }, t)
}

func (t *tuner) retune() {
	metrics.Read(t.sample)
	live, scan := t.sample[0].Value, t.sample[1].Value
	if live.Kind() == metrics.KindUint64 && scan.Kind() == metrics.KindUint64 {
		l := min(live.Uint64(), math.MaxInt64/4)
		s := min(scan.Uint64(), math.MaxInt64/4)
		debug.SetMemoryLimit(Limit(int64(l), int64(s), t.ceiling))
	}
	t.arm()
}
