package engine

import (
	"fmt"
	"slices"
)

// Failure is why an attempt of a bundle failed, as the driver saw it.
type Failure struct {
	// User: the SDK reported an error raised by the bundle's code.
	// Otherwise the worker died, its connection dropped or a wait for it
	// timed out: the fault was the attempt's, not the input's.
	User bool
	// Cause names a user failure: the exception's type and message (or a
	// Go SDK's root error), the same text when it fails the same way.
	Cause string
	// Worker is the worker the attempt ran on.
	Worker string
	// Workers is how many workers could run the bundle: those of its
	// environment, counting the workers of a LOOPBACK job, which all live
	// in its client's process, as one.
	Workers int
}

// retryVerdict is the retry policy, given a bundle's attempt that just
// failed with f, the most attempts a bundle may have, and the causes of
// its earlier user failures. Worker deaths, lost connections and timeouts
// say nothing about the input, so they run again until the attempts run
// out. User code that raised once is likely to raise again on the same
// input: it runs once more only on another worker (a fault of that
// worker's host, such as its memory or disk, would not follow it), and
// never after raising the same exception twice. why says why not.
func retryVerdict(attempt, maxAttempts int, userCauses []string, f Failure) (again bool, why string) {
	switch {
	case attempt >= maxAttempts:
		return false, fmt.Sprintf("giving up after %d attempt(s)", attempt)
	case !f.User:
		return true, ""
	case f.Workers <= 1:
		return false, "not retried: user code failed and the job has no other worker to run it on"
	case slices.Contains(userCauses, f.Cause):
		return false, "not retried: user code failed the same way twice"
	}
	return true, ""
}
