package jobs

import (
	"fmt"
	"strings"
	"testing"
)

// Failures group by cause (its first line) and place: a group counts its
// failures, keeps when it was first and last seen and the last worker
// and attempt.
func TestHistoryGroupsFailuresByCause(t *testing.T) {
	s := NewStats()
	s.AddFailure(BundleFailure{At: 10, Cause: "boom on x\n\tat stack", Stage: "s1", Transform: "Flaky", Worker: "w1", Attempt: 1})
	s.AddFailure(BundleFailure{At: 30, Cause: "boom on x\nother stack", Stage: "s1", Transform: "Flaky", Worker: "w2", Attempt: 2})
	s.AddFailure(BundleFailure{At: 20, Cause: "boom on x", Stage: "s2", Transform: "Other", Worker: "w1", Attempt: 1})
	s.AddFailure(BundleFailure{At: 40, Cause: "\n  ", Stage: "s1", Worker: "w1", Attempt: 1})
	got := s.Snapshot().Exceptions
	want := []ExceptionGroup{
		{Cause: "boom on x", Stage: "s1", Transform: "Flaky", Worker: "w2", Attempt: 2, First: 10, Last: 30, Count: 2},
		{Cause: "boom on x", Stage: "s2", Transform: "Other", Worker: "w1", Attempt: 1, First: 20, Last: 20, Count: 1},
		{Cause: "unknown failure", Stage: "s1", Worker: "w1", Attempt: 1, First: 40, Last: 40, Count: 1},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("exceptions = %+v\nwant %+v", got, want)
	}
}

// Past the bound, a new cause replaces the one seen least recently, and
// a long cause is clipped.
func TestHistoryBoundsExceptions(t *testing.T) {
	s := NewStats()
	for i := range maxExceptions {
		s.AddFailure(BundleFailure{At: int64(100 + i), Cause: fmt.Sprint("cause ", i), Stage: "s"})
	}
	s.AddFailure(BundleFailure{At: 1000, Cause: "cause 0", Stage: "s"}) // seen again: cause 1 is now the stalest
	s.AddFailure(BundleFailure{At: 1001, Cause: strings.Repeat("é", maxCauseLen), Stage: "s"})
	got := s.Snapshot().Exceptions
	if len(got) != maxExceptions {
		t.Fatalf("%d groups, want %d", len(got), maxExceptions)
	}
	for _, g := range got {
		if g.Cause == "cause 1" {
			t.Errorf("the stalest cause was kept: %+v", g)
		}
		if g.Cause == "cause 0" && g.Count != 2 {
			t.Errorf("cause 0 counted %d, want 2", g.Count)
		}
	}
	if c := got[1].Cause; len(c) > maxCauseLen+len("…") || !strings.HasSuffix(c, "…") || !strings.HasPrefix(c, "éé") {
		t.Errorf("the long cause took cause 1's place as %q (%d bytes), want it clipped", c[:10], len(c))
	}
}

// The history keeps the last checkpoints, and savepoints apart so that
// periodic checkpoints do not push them out; a failed savepoint is not
// listed as one.
func TestHistoryBoundsCheckpoints(t *testing.T) {
	s := NewStats()
	s.AddCheckpoint(CheckpointEvent{At: 1, Trigger: TriggerSavepoint, Dir: "/sp/1", Bytes: 10})
	s.AddCheckpoint(CheckpointEvent{At: 2, Trigger: TriggerCancel, Dir: "/sp/2", Error: "disk full"})
	for i := range maxCheckpoints + 5 {
		s.AddCheckpoint(CheckpointEvent{At: int64(10 + i), Trigger: TriggerInterval, Bytes: 100})
	}
	snap := s.Snapshot()
	if n := len(snap.Checkpoints); n != maxCheckpoints || snap.Checkpoints[0].At != 15 || snap.Checkpoints[n-1].At != 10+maxCheckpoints+4 {
		t.Errorf("checkpoints: %d from %d, want the last %d", n, snap.Checkpoints[0].At, maxCheckpoints)
	}
	if len(snap.Savepoints) != 1 || snap.Savepoints[0].Dir != "/sp/1" {
		t.Errorf("savepoints = %+v, want only /sp/1", snap.Savepoints)
	}
	for i := range maxSavepoints + 1 {
		s.AddCheckpoint(CheckpointEvent{At: int64(1000 + i), Trigger: TriggerSavepoint, Dir: fmt.Sprint("/sp/x", i)})
	}
	if sp := s.Snapshot().Savepoints; len(sp) != maxSavepoints || sp[0].Dir != "/sp/x1" {
		t.Errorf("savepoints past the bound: %d from %s, want %d from /sp/x1", len(sp), sp[0].Dir, maxSavepoints)
	}
}
