package engine

import (
	"slices"
	"testing"
)

// TestPanesHandedOutAsRead: a GroupByKey whose output passes what its
// reader may have pending hands it out in pieces as the reader's bundles
// finish, the reader starting before the last pane is out, and the reader
// gets every group exactly as when it all fits.
func TestPanesHandedOutAsRead(t *testing.T) {
	whole := pendPipeline(t) // 3 bundle slots: 12 MiB of room, the output fits
	want, wholeFlight, _ := pendRun(t, whole, whole, false)
	pieces := pendPipeline(t)
	pieces.PaneRoom = 1 << 20 // less than the 4 MB output
	got, flight, _ := pendRun(t, pieces, pieces, false)
	if !slices.Equal(got, want) {
		t.Fatalf("handed out in pieces the reader got %d groups, differing from the %d at once", len(got), len(want))
	}
	// Each top-up stops after the pane passing the room (< 300 KB).
	if flight > pieces.PaneRoom+300<<10 || flight >= wholeFlight {
		t.Errorf("the reader had %d bytes handed out at once (output %d, room %d)", flight, wholeFlight, pieces.PaneRoom)
	}
	t.Logf("reader input at once: %d bytes with room for all, %d in pieces", wholeFlight, flight)
}
