package execute

import "testing"

// A checkpoint of bounded restrictions reaches the SDK as a tiny positive
// fraction (the Go SDK rounds 0 below zero from a bundle's second element
// on); of unbounded ones it stays 0, as a tiny share of an unbounded
// remainder is unbounded; other fractions pass through.
func TestSplitFraction(t *testing.T) {
	for _, tc := range []struct {
		asked   float64
		bounded bool
		want    float64
	}{
		{0, true, boundedCheckpoint},
		{0, false, 0},
		{0.5, true, 0.5},
		{0.5, false, 0.5},
	} {
		if got := splitFraction(tc.asked, tc.bounded); got != tc.want {
			t.Errorf("splitFraction(%v, bounded %v) = %v, want %v", tc.asked, tc.bounded, got, tc.want)
		}
	}
	if boundedCheckpoint <= 0 || boundedCheckpoint > 1e-5 {
		t.Errorf("boundedCheckpoint %v: want a tiny positive fraction", boundedCheckpoint)
	}
}
