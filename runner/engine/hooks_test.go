package engine

// Test hooks: what tests read of an engine's internals. They live here,
// not in the engine's API, since no driver has a use for them.

// processingTime is the engine's processing time.
func processingTime(e *Engine) int64 { return e.flow.now }

// inFlight is the number of bundles handed out and not yet committed.
func bundlesInFlight(e *Engine) int { return len(e.flight) }

// isDraining reports whether Drain was called.
func isDraining(e *Engine) bool { return e.draining }
