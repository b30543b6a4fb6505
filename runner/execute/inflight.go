package execute

import (
	"sync"
	"sync/atomic"
	"time"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/engine"
)

// inflight is the driver's record of one running attempt of a bundle: all
// its per-bundle state, so new state is a field here. The driver's map of
// records is touched only by the driver goroutine; the bundle's own
// goroutine and its split requests share a record only through the
// fields under mu and the atomic.
type inflight struct {
	b        engine.Bundle
	ss       *sdkStage
	since    time.Time    // handed to a worker, for its latency
	outBytes atomic.Int64 // output received so far, counted by the data plane
	workSeen int64        // its element count reported so far (noteWork)
	metrics  []*pipepb.MonitoringInfo
	rate     rateMark // reported to its stage's rate window so far (rates.go)

	mu   sync.Mutex
	inst string // harness instruction running it; "" until started and once finished
	// splits counts split requests in flight: the bundle's completion is
	// reported only after the driver has every split result, since work a
	// split gave up is lost if its result is dropped.
	splits sync.WaitGroup
	// turn lets one split request be in flight at a time, so the SDK
	// answers them in the order the driver applies their results: each
	// result is relative to what the bundle kept after the one before.
	turn chan struct{}
}

func newInflight(b engine.Bundle, ss *sdkStage) *inflight {
	now := time.Now()
	return &inflight{b: b, ss: ss, since: now, rate: rateMark{atMs: now.UnixMilli()}, turn: make(chan struct{}, 1)}
}

// started records the harness instruction the bundle runs as.
func (f *inflight) started(inst string) {
	f.mu.Lock()
	f.inst = inst
	f.mu.Unlock()
}

// finished refuses further split requests and waits until every one in
// flight has been answered and delivered; call before reporting the
// bundle done.
func (f *inflight) finished() {
	f.mu.Lock()
	f.inst = ""
	f.mu.Unlock()
	f.splits.Wait()
}

// beginSplit registers a split request; false if the bundle is not
// running (not started yet, or finished). The request takes the bundle's
// turn before it is sent and passes it on once its result is delivered.
func (f *inflight) beginSplit() (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.inst == "" {
		return "", false
	}
	f.splits.Add(1)
	return f.inst, true
}

// instruction is the harness instruction running the bundle, or "".
func (f *inflight) instruction() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.inst
}
