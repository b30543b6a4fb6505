package execute

import (
	"testing"
	"time"

	"github.com/beam-runner/beam-runner/runner/engine"
	"github.com/beam-runner/beam-runner/testsupport/testwait"
)

// A bundle takes split requests only while it runs, and its end waits
// for the answers of those in flight, so no split result is dropped.
func TestInflightSplitsOnlyWhileRunningAndEndAfterTheirResults(t *testing.T) {
	rec := newInflight(engine.Bundle{ID: 7}, nil)
	if _, ok := rec.beginSplit(); ok {
		t.Fatal("split begun before the bundle started")
	}
	rec.started("inst-1")
	inst, ok := rec.beginSplit()
	if !ok || inst != "inst-1" || rec.instruction() != "inst-1" {
		t.Fatalf("beginSplit = %q, %v; want inst-1", inst, ok)
	}
	ended := make(chan struct{})
	go func() {
		rec.finished()
		close(ended)
	}()
	// finished has begun once it refuses further splits.
	testwait.Until(t, 10*time.Second, "finished to begin", func() bool { return rec.instruction() == "" })
	select {
	case <-ended:
		t.Fatal("finished returned with a split result outstanding")
	default:
	}
	if _, ok := rec.beginSplit(); ok {
		t.Fatal("split begun after the bundle finished")
	}
	rec.splits.Done() // the outstanding split's result is delivered
	testwait.Closed(t, 10*time.Second, "finished to return after the split's result was delivered", ended)
}
