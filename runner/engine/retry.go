package engine

// Retry records a failed attempt of an in-flight bundle and decides whether
// it runs again. A bundle with attempts left stays in flight, keeping its
// input, keys and timers, and Ready hands it out again with Attempt
// incremented: nothing a failed attempt produced was committed, so running
// it again is exact. Otherwise the engine forgets the bundle and Retry
// returns false: the job is expected to fail.
//
// A bundle that gave up work by a split is not retried: its residuals were
// already filed to run elsewhere, so running its whole input again would
// process them twice.
func (e *Engine) Retry(id int) bool {
	b := e.flight[id]
	if b == nil {
		return false
	}
	if b.split || b.Attempt >= e.MaxAttempts() {
		e.Fail(id)
		return false
	}
	b.Attempt++
	b.started, b.splitAt = e.now, e.now
	e.retries = append(e.retries, b)
	return true
}

// MaxAttempts is how many times one bundle may run.
func (e *Engine) MaxAttempts() int { return max(1, e.spec.MaxAttempts) }

// takeRetries returns the bundles waiting to run again, oldest first.
func (e *Engine) takeRetries() []*Bundle {
	out := e.retries
	e.retries = nil
	return out
}
