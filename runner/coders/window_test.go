package coders

import (
	"math"
	"testing"
)

func TestWindowBoundsInterval(t *testing.T) {
	for _, tc := range []struct {
		name       string
		win        IntervalWindow
		start, max int64
	}{
		{"ordinary", IntervalWindow{0, 10}, 0, 9},
		// Beam's window_test.py TestCustomWindows assigns [5, 5).
		{"empty", IntervalWindow{5000, 5000}, 5000, 4999},
		// Python writes the span as a signed varint, so this round-trips.
		{"end before start", IntervalWindow{7, 3}, 7, 2},
		{"whole time", IntervalWindow{MinTimestamp, MaxTimestamp}, MinTimestamp, MaxTimestamp - 1},
	} {
		enc := AppendIntervalWindow(nil, tc.win)
		start, maxTS, err := WindowBounds(IntervalWindows, enc)
		if err != nil || start != tc.start || maxTS != tc.max {
			t.Errorf("%s: WindowBounds(%x) = %d, %d, %v; want %d, %d", tc.name, enc, start, maxTS, err, tc.start, tc.max)
		}
	}
}

func TestWindowBoundsIntervalMalformed(t *testing.T) {
	ok := AppendIntervalWindow(nil, IntervalWindow{0, 10})
	// A span reaching below the smallest int64 from the end.
	overflow := AppendUvarint(AppendTimestamp(nil, MinTimestamp), math.MaxInt64)
	for name, b := range map[string][]byte{
		"short end":      ok[:5],
		"no span":        ok[:TimestampSize],
		"trailing bytes": append(append([]byte{}, ok...), 0),
		"start overflow": overflow,
	} {
		if _, _, err := WindowBounds(IntervalWindows, b); err == nil {
			t.Errorf("%s: WindowBounds(%x) gave no error", name, b)
		}
	}
}
