package engine

import "testing"

// The side window a main window's max timestamp maps to ends where
// Beam's default window mappings say (the latest-starting window for
// sliding windows), and expires its allowed lateness later; unknown and
// global windows report no expiry.
func TestSideWindowExpiry(t *testing.T) {
	for _, c := range []struct {
		fn     SideWindowFn
		ts     int64
		end    int64
		hasEnd bool
	}{
		{SideWindowFn{Kind: SideWindowsFixed, Size: 2000}, 1999, 2000, true},
		{SideWindowFn{Kind: SideWindowsFixed, Size: 2000}, 2000, 4000, true},
		{SideWindowFn{Kind: SideWindowsFixed, Size: 2000}, -1, 0, true},
		{SideWindowFn{Kind: SideWindowsFixed, Size: 2000, Offset: 500}, 2499, 2500, true},
		{SideWindowFn{Kind: SideWindowsSliding, Size: 7000, Period: 1000}, 14999, 21000, true},
		{SideWindowFn{Kind: SideWindowsFixed, Size: 7000, Lateness: 15000}, 44999, 64000, true},
		{SideWindowFn{Kind: SideWindowsGlobal}, 5, 0, false},
		{SideWindowFn{}, 5, 0, false},
		{SideWindowFn{Kind: SideWindowsFixed}, 5, 0, false},
	} {
		end, ok := sideWindowExpiry(c.fn, c.ts)
		if end != c.end || ok != c.hasEnd {
			t.Errorf("sideWindowExpiry(%+v, %d) = %d, %v; want %d, %v", c.fn, c.ts, end, ok, c.end, c.hasEnd)
		}
	}
}
