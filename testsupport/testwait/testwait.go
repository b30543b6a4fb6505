// Package testwait lets a test wait for a condition instead of sleeping: a
// test that sleeps and then asserts fails on a loaded machine and idles on
// a fast one. Every wait has a deadline, so a condition that never comes
// fails the test instead of hanging it.
package testwait

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// The pause between polls starts short, for conditions that are nearly
// met, and grows to at most maxPause, to stay cheap on long waits.
const (
	firstPause = time.Millisecond
	maxPause   = 100 * time.Millisecond
)

// For polls cond until it reports true or an error, ctx ends, or limit
// passes. It returns nil once cond holds.
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
			return fmt.Errorf("not within %v: %w", limit, ctx.Err())
		case <-time.After(pause):
		}
		pause = min(2*pause, maxPause)
	}
}

// Until fails t, saying what it waited for, unless cond holds within limit.
func Until(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	if err := For(context.Background(), limit, func() (bool, error) { return cond(), nil }); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}
