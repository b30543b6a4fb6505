package engine

import (
	"fmt"
	"testing"

	"github.com/beam-runner/beam-runner/runner/coders"
)

func TestSortDeadline(t *testing.T) {
	for _, tc := range []struct{ ts, lateness, want int64 }{
		{10, 0, 10},
		{10, 5, 15},
		{coders.MaxTimestamp - 3, 5, coders.MaxTimestamp}, // saturates
		{coders.MinTimestamp, 0, coders.MinTimestamp},
	} {
		if got := sortDeadline(tc.ts, tc.lateness); got != tc.want {
			t.Errorf("sortDeadline(%d, %d) = %d, want %d", tc.ts, tc.lateness, got, tc.want)
		}
	}
	for _, tc := range []struct {
		d, wm int64
		want  bool
	}{
		{10, 10, false}, // a watermark at the deadline has not passed it
		{10, 11, true},
		{coders.MaxTimestamp, coders.MaxTimestamp, true}, // the end of time passes all
		{coders.EndOfGlobalWindow, coders.EndOfGlobalWindow + 1000, true},
	} {
		if got := sortPassed(tc.d, tc.wm); got != tc.want {
			t.Errorf("sortPassed(%d, %d) = %v, want %v", tc.d, tc.wm, got, tc.want)
		}
	}
}

// A sort buffer releases, in timestamp order and arrival order among
// equal timestamps, exactly the elements whose deadline passed.
func TestSortBufferRelease(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ts       []int64
		lateness int64
		wms      []int64
		want     []string // released per watermark, as ts/arrival
	}{
		{"reverse arrival, end of input", []int64{3, 2, 1}, 0, []int64{coders.MaxTimestamp}, []string{"[1/2 2/1 3/0]"}},
		{"equal timestamps keep arrival order", []int64{5, 1, 5, 1}, 0, []int64{2, 6}, []string{"[1/1 1/3]", "[5/0 5/2]"}},
		{"watermark at a timestamp holds it", []int64{4, 2}, 0, []int64{4, 5}, []string{"[2/1]", "[4/0]"}},
		{"lateness delays release", []int64{1, 3}, 5, []int64{6, 7, 9}, []string{"[]", "[1/0]", "[3/1]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b sortBuffer
			for i, ts := range tc.ts {
				b.add(ts, []byte{byte(i)})
			}
			for i, wm := range tc.wms {
				var got []string
				for _, el := range b.release(wm, tc.lateness) {
					got = append(got, fmt.Sprintf("%d/%d", el.ts, el.raw[0]))
				}
				if s := fmt.Sprint(got); s != tc.want[i] && !(len(got) == 0 && tc.want[i] == "[]") {
					t.Errorf("release at %d = %s, want %s", wm, s, tc.want[i])
				}
			}
			if len(b.elems) != 0 {
				t.Errorf("%d elements left unreleased", len(b.elems))
			}
		})
	}
}
