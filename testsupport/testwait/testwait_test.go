package testwait

import (
	"context"
	"errors"
	"strings"
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

func TestAnExpiredWaitDumpsTheGoroutines(t *testing.T) {
	err := For(context.Background(), 10*time.Millisecond, func() (bool, error) { return false, nil })
	if !errors.Is(err, ErrExpired) || !strings.Contains(err.Error(), "goroutine ") ||
		!strings.Contains(err.Error(), "TestAnExpiredWaitDumpsTheGoroutines") {
		t.Fatalf("For = %v; want ErrExpired and a dump naming this test", err)
	}
}

func TestRecvErrGetsAValueOrExpires(t *testing.T) {
	ch := make(chan int, 1)
	ch <- 7
	if v, err := RecvErr(context.Background(), time.Second, ch); v != 7 || err != nil {
		t.Fatalf("RecvErr = %d, %v; want 7, nil", v, err)
	}
	if _, err := RecvErr(context.Background(), 10*time.Millisecond, ch); !errors.Is(err, ErrExpired) {
		t.Fatalf("RecvErr on an empty channel = %v; want ErrExpired", err)
	}
	close(ch)
	if _, err := RecvErr(context.Background(), time.Second, ch); err == nil || errors.Is(err, ErrExpired) {
		t.Fatalf("RecvErr on a closed channel = %v; want a closed error", err)
	}
}

func TestWaitsEndBeforeTheTestsDeadline(t *testing.T) {
	end, ok := t.Deadline()
	if !ok {
		t.Skip("no -timeout deadline to clip to")
	}
	if got := Limit(t, 1000*time.Hour); got > time.Until(end) {
		t.Errorf("Limit = %v; want it to end before the test's deadline in %v", got, time.Until(end))
	}
	if got := Limit(t, time.Second); got != time.Second {
		t.Errorf("Limit(1s) = %v; want a short limit kept", got)
	}
}
