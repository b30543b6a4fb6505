package bench

import (
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
	s := time.Second
	cases := []struct {
		in   []time.Duration
		want time.Duration
	}{
		{nil, 0},
		{[]time.Duration{3 * s}, 3 * s},
		{[]time.Duration{5 * s, 1 * s, 3 * s}, 3 * s},
		{[]time.Duration{4 * s, 1 * s, 2 * s, 3 * s}, 2500 * time.Millisecond},
	}
	for _, c := range cases {
		if got := Median(c.in); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestMedianDoesNotReorderInput(t *testing.T) {
	in := []time.Duration{3, 1, 2}
	Median(in)
	if in[0] != 3 || in[1] != 1 || in[2] != 2 {
		t.Errorf("input reordered: %v", in)
	}
}

func TestRatio(t *testing.T) {
	if got := Ratio(3*time.Second, 2*time.Second); got != "1.50x" {
		t.Errorf("Ratio = %q", got)
	}
	if got := Ratio(0, 2*time.Second); got != "-" {
		t.Errorf("Ratio with missing side = %q", got)
	}
}

func TestFormat(t *testing.T) {
	if got := FormatKB(1536); got != "2MiB" {
		t.Errorf("FormatKB = %q", got)
	}
	if got := FormatKB(0); got != "-" {
		t.Errorf("FormatKB(0) = %q", got)
	}
	if got := FormatDuration(1234 * time.Millisecond); got != "1.23s" {
		t.Errorf("FormatDuration = %q", got)
	}
	if got := FormatDuration(65 * time.Second); got != "65.0s" {
		t.Errorf("FormatDuration = %q", got)
	}
	if m := MedianInt64([]int64{3, 9, 2}); m != 3 {
		t.Errorf("MedianInt64 of 3 = %d", m)
	}
	if m := MedianInt64([]int64{3, 9, 2, 5}); m != 4 {
		t.Errorf("MedianInt64 of 4 = %d", m)
	}
	if m := MedianInt64(nil); m != 0 {
		t.Errorf("MedianInt64 of none = %d", m)
	}
}
