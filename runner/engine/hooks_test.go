package engine

import "sync"

// Test hooks: what tests read of an engine's internals. They live here,
// not in the engine's API, since no driver has a use for them.

// processingTime is the engine's processing time.
func processingTime(e *Engine) int64 { return e.flow.now }

// inFlight is the number of bundles handed out and not yet committed.
func bundlesInFlight(e *Engine) int { return len(e.flight) }

// isDraining reports whether Drain was called.
func isDraining(e *Engine) bool { return e.draining }

// lastReady is, per engine, the Ready nextReady read last.
var lastReady sync.Map // *Engine -> Ready

// nextReady does what a driver does each round: acknowledge the Ready it
// read last, let the engine decide, and read the new decisions.
func nextReady(e *Engine) Ready {
	last, _ := lastReady.Load(e)
	rd, _ := last.(Ready)
	e.Advance(rd)
	rd = e.Ready()
	lastReady.Store(e, rd)
	return rd
}

// acknowledgeLast acknowledges the Ready nextReady read last, as a driver
// does before it takes a snapshot.
func acknowledgeLast(e *Engine) {
	if last, ok := lastReady.Load(e); ok {
		e.acknowledge(last.(Ready))
		lastReady.Delete(e)
	}
}
