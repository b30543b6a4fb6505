// Package testwait lets a test wait for a condition instead of sleeping: a
// test that sleeps and then asserts fails on a loaded machine and idles on
// a fast one. Every wait has a deadline, so a condition that never comes
// fails the test instead of hanging it, and the failure carries a dump of
// every goroutine, so a wait that expires says what the process was doing.
package testwait

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"
)

// The pause between polls starts short, for conditions that are nearly
// met, and grows to at most maxPause, to stay cheap on long waits.
const (
	firstPause = time.Millisecond
	maxPause   = 100 * time.Millisecond
)

// maxDump bounds a goroutine dump: a test binary with a wedged server can
// hold thousands of goroutines, and a failure message of megabytes hides
// more than it shows.
const maxDump = 1 << 20

// ErrExpired is wrapped by every error For returns at its limit, so a caller
// can tell an expired wait from the condition's own error.
var ErrExpired = errors.New("wait expired")

// Limit is limit, shortened to end shortly before t's deadline (go test's
// -timeout), for callers of For that hold a test.
func Limit(t testing.TB, limit time.Duration) time.Duration { return clip(t, limit) }

// For polls cond until it reports true or an error, ctx ends, or limit
// passes. It returns nil once cond holds; at the limit or ctx's end, the
// error carries a goroutine dump.
func For(ctx context.Context, limit time.Duration, cond func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	pause := firstPause
	for {
		ok, err := cond()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return expired(limit, ctx.Err())
		case <-time.After(pause):
		}
		pause = min(2*pause, maxPause)
	}
}

func expired(limit time.Duration, cause error) error {
	return fmt.Errorf("not within %v: %w: %w\n%s", limit, ErrExpired, cause, Goroutines())
}

// testMargin is how long before go test's own deadline (-timeout) a wait
// gives up: its failure then says what it waited for, with the test's
// logs, where go test's timeout would only panic.
const testMargin = 20 * time.Second

// clip shortens limit to end testMargin before t's deadline, if it has one.
func clip(t testing.TB, limit time.Duration) time.Duration {
	d, ok := t.(interface{ Deadline() (time.Time, bool) })
	if !ok {
		return limit
	}
	if end, ok := d.Deadline(); ok {
		limit = max(min(limit, time.Until(end)-testMargin), time.Second)
	}
	return limit
}

// Until fails t, saying what it waited for, unless cond holds within limit
// (or, sooner, shortly before the test binary's deadline).
func Until(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	limit = clip(t, limit)
	if err := For(context.Background(), limit, func() (bool, error) { return cond(), nil }); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// NoErr fails t unless cond returns nil within limit; cond's last error is
// in the failure message. It suits conditions that are checks ("the file
// has these lines") rather than predicates.
func NoErr(t testing.TB, limit time.Duration, what string, cond func() error) {
	t.Helper()
	limit = clip(t, limit)
	var last error
	err := For(context.Background(), limit, func() (bool, error) {
		last = cond()
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s (last: %v): %v", what, last, err)
	}
}

// Recv returns the next value from ch, failing t if none comes within
// limit or ch is closed.
func Recv[T any](t testing.TB, limit time.Duration, what string, ch <-chan T) T {
	t.Helper()
	v, err := RecvErr(context.Background(), clip(t, limit), ch)
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
	return v
}

// RecvErr is Recv for callers that are not the test's goroutine (t.Fatal
// must not be called from another goroutine) or that want the error.
func RecvErr[T any](ctx context.Context, limit time.Duration, ch <-chan T) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var zero T
	select {
	case v, ok := <-ch:
		if !ok {
			return zero, errors.New("the channel closed")
		}
		return v, nil
	case <-ctx.Done():
		return zero, expired(limit, ctx.Err())
	}
}

// Closed fails t unless ch is closed (or yields a value) within limit:
// the wait for a done channel.
func Closed[T any](t testing.TB, limit time.Duration, what string, ch <-chan T) {
	t.Helper()
	if err := ClosedErr(clip(t, limit), ch); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// ClosedErr is Closed for callers off the test's goroutine, such as a
// DoFn that blocks until the test releases it.
func ClosedErr[T any](limit time.Duration, ch <-chan T) error {
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case <-ch:
		return nil
	case <-timer.C:
		return expired(limit, context.DeadlineExceeded)
	}
}

// Goroutines returns the stacks of every goroutine in the process, clipped
// at maxDump bytes.
func Goroutines() string {
	buf := make([]byte, 64<<10)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return "goroutines:\n" + string(buf[:n])
		}
		if len(buf) >= maxDump {
			return "goroutines (clipped):\n" + string(buf)
		}
		buf = make([]byte, 2*len(buf))
	}
}
