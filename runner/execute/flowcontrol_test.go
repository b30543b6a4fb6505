package execute

import (
	"context"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/rtrackers/offsetrange"
	"github.com/beam-runner/beam-runner/runner/engine"
	"github.com/beam-runner/beam-runner/runner/jobs"
)

func init() {
	beam.RegisterType(reflect.TypeOf((*floodSource)(nil)).Elem())
	beam.RegisterFunction(slowSink)
}

// floodSource is an unbounded source far faster than slowSink: it claims
// Batch positions of [0, N) a call, emits Size bytes for each, and asks to
// be resumed at once.
type floodSource struct {
	WholeRange
	Batch int64
	Size  int
}

func (fn *floodSource) ProcessElement(rt *sdf.LockRTracker, _ []byte, emit func([]byte)) sdf.ProcessContinuation {
	start := rt.GetRestriction().(offsetrange.Restriction).Start
	for pos := start; pos < start+fn.Batch; pos++ {
		if !rt.TryClaim(pos) {
			return sdf.StopProcessing()
		}
		emit(make([]byte, fn.Size))
	}
	return sdf.ResumeProcessingIn(0)
}

// slowSink spends 5 ms on each element: 200 a second a bundle.
func slowSink(_ []byte) { time.Sleep(5 * time.Millisecond) }

// peakQueued runs the flood into the slow sink after a Reshuffle (so they
// are not fused) with flow control fc, and returns the most input the
// engine held queued for its stages at once, and the most back-pressured
// ms a second any stage's published rates show (-1: none published).
func peakQueued(t *testing.T, fc *engine.FlowControl) (int64, float64) {
	t.Helper()
	var mu sync.Mutex
	var peak int64
	flowProbe = func(ps map[string]engine.PressureStats) {
		var n int64
		for _, p := range ps {
			n += p.QueuedBytes
		}
		mu.Lock()
		peak = max(peak, n)
		mu.Unlock()
	}
	defer func() { flowProbe = nil }()
	p, s := beam.NewPipelineWithRoot()
	flood := beam.ParDo(s, &floodSource{WholeRange: WholeRange{N: 3000}, Batch: 100, Size: 4 << 10}, beam.Impulse(s))
	beam.ParDo0(s, slowSink, beam.Reshuffle(s, flood))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	job := &jobs.Job{ID: "test", Name: t.Name()}
	if err := runOn(ctx, New(Options{Parallelism: 2, FlowControl: fc}), p, job, map[string]any{}); err != nil {
		t.Fatal(err)
	}
	pressed := -1.0
	for _, st := range job.Stats().Snapshot().Stages {
		if r := st.Rates; r != nil && r.BackPressuredMsPerSec != nil {
			pressed = max(pressed, *r.BackPressuredMsPerSec)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	return peak, pressed
}

// A streaming source far faster than a stage after a Reshuffle: with flow
// control the engine's queued input stays near the stage's bound (the
// backlog stays in the source), without it the source's whole output
// (12 MB) piles up in the runner.
func TestFlowControlBoundsQueuedInput(t *testing.T) {
	const bound = 4 << 20
	on, pressed := peakQueued(t, &engine.FlowControl{MinBytes: 256 << 10, MaxBytes: 1 << 20})
	if on > bound {
		t.Errorf("with flow control, %d bytes were queued at once, want at most %d", on, bound)
	}
	// The source spends much of the run held: its rates say so.
	if pressed <= 0 {
		t.Errorf("with flow control, the most back-pressured ms a second of any stage is %v, want > 0", pressed)
	}
	off, pressed := peakQueued(t, nil)
	if off <= bound {
		t.Errorf("without flow control, only %d bytes were queued at once: the test cannot tell flow control works", off)
	}
	if pressed != -1 {
		t.Errorf("without flow control, a stage's rates show %v back-pressured ms a second, want none (not measured)", pressed)
	}
	t.Logf("peak queued input: %d bytes with flow control, %d without", on, off)
}
