package web

import (
	"fmt"
	"testing"
	"time"

	"github.com/beam-runner/beam-runner/runner/jobs"
)

// A long-lived server exports per-stage series for live jobs and only the
// most recently ended ones, so label cardinality stays bounded.
func TestExportedJobsAreBounded(t *testing.T) {
	base := time.Unix(1000, 0)
	var sums []jobs.Summary
	for i := 0; i < maxFinishedJobs+5; i++ {
		sums = append(sums, jobs.Summary{ID: fmt.Sprintf("done-%02d", i), End: base.Add(time.Duration(i) * time.Second)})
	}
	sums = append(sums, jobs.Summary{ID: "live-a"}, jobs.Summary{ID: "live-b"})
	got := exported(sums)
	if len(got) != maxFinishedJobs+2 {
		t.Fatalf("%d jobs exported, want %d", len(got), maxFinishedJobs+2)
	}
	ids := map[string]bool{}
	for _, s := range got {
		ids[s.ID] = true
	}
	if !ids["live-a"] || !ids["live-b"] || ids["done-00"] || !ids[fmt.Sprintf("done-%02d", maxFinishedJobs+4)] {
		t.Errorf("exported %v: want both live jobs and the newest ended ones", ids)
	}
}

func TestWatermarkLag(t *testing.T) {
	now := time.UnixMilli(1_800_000_000_000)
	if lag, ok := watermarkLag(now.Add(-1500*time.Millisecond).UnixMilli(), now); !ok || lag != 1.5 {
		t.Errorf("lag %v %v, want 1.5s", lag, ok)
	}
	for _, wm := range []int64{-9223372036854775, 9223372036854775, 9223371950454775} {
		if _, ok := watermarkLag(wm, now); ok {
			t.Errorf("watermark %d has a lag; want none (not started or complete)", wm)
		}
	}
}
