package engine

import "slices"

// Retry records a failed attempt of an in-flight bundle and decides, by
// the retry policy (retryVerdict), whether it runs again. A bundle that
// does stays in flight, keeping its input, keys and timers, and Ready
// hands it out again with Attempt incremented: nothing a failed attempt
// produced was committed, so running it again is exact. After a user
// failure the new attempt's Avoid names the workers where user code
// failed. Otherwise the engine forgets the bundle and Retry returns
// false, saying why: the job is expected to fail.
//
// A bundle that gave up work by splits runs again on what it still owns
// (see ownedInput): its residuals were filed to run elsewhere. One whose
// split did not say which input it gave up cannot be run again exactly,
// so it is not retried.
func (e *Engine) Retry(id int, f Failure) (bool, string) {
	defer e.checkInvariants("Retry")
	b := e.flight[id]
	if b == nil {
		return false, "not retried: the bundle is not running"
	}
	if b.split.opaque {
		e.Fail(id)
		return false, "not retried: a split of it did not say which input it gave up"
	}
	if again, why := retryVerdict(b.Attempt, e.MaxAttempts(), b.userCauses, f); !again {
		e.Fail(id)
		return false, why
	}
	if b.split.owned >= 0 || b.split.primaryAt >= 0 {
		in, err := e.ownedInput(id)
		if err != nil {
			e.Fail(id)
			return false, "not retried: " + err.Error()
		}
		b.Input, b.split = in, newSplitBook()
	}
	if f.User {
		b.userCauses = append(b.userCauses, f.Cause)
		// A new slice: the driver holds the one handed out before.
		b.Avoid = append(slices.Clip(b.Avoid), f.Worker)
	}
	b.Attempt++
	b.started, b.splitAt, b.ckptAt = e.flow.now, e.flow.now, e.flow.now
	b.out, b.outAtCkpt, b.outAtTimed = 0, 0, 0 // the new run reports its output afresh
	e.retries = append(e.retries, b)
	return true, ""
}

// MaxAttempts is how many times one bundle may run.
func (e *Engine) MaxAttempts() int { return max(1, e.flow.spec.MaxAttempts) }

// takeRetries returns the bundles waiting to run again, oldest first.
func (e *Engine) takeRetries() []*bundle {
	out := e.retries
	e.retries = nil
	return out
}
