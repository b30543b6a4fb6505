package testwait

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestForReturnsOnceTheConditionHolds(t *testing.T) {
	calls := 0
	err := For(context.Background(), 10*time.Second, func() (bool, error) {
		calls++
		return calls == 3, nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("For = %v after %d calls; want nil after 3", err, calls)
	}
}

func TestForGivesUpAtTheLimit(t *testing.T) {
	start := time.Now()
	err := For(context.Background(), 50*time.Millisecond, func() (bool, error) { return false, nil })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("For = %v; want the deadline", err)
	}
	if d := time.Since(start); d < 50*time.Millisecond || d > 5*time.Second {
		t.Fatalf("gave up after %v; want about 50ms", d)
	}
}

func TestForStopsAtTheConditionsError(t *testing.T) {
	boom := errors.New("boom")
	calls := 0
	err := For(context.Background(), 10*time.Second, func() (bool, error) { calls++; return false, boom })
	if !errors.Is(err, boom) || calls != 1 {
		t.Fatalf("For = %v after %d calls; want boom after 1", err, calls)
	}
}

func TestForEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := For(ctx, 10*time.Second, func() (bool, error) { return false, nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("For = %v; want the context's cancellation", err)
	}
}
