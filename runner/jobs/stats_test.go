package jobs

import (
	"testing"
	"time"
)

func TestStatsCountsBundlesAndDerivesRunnerStages(t *testing.T) {
	s := NewStats()
	s.SetStages([]StageInfo{
		{ID: "s1", Kind: "sdk", Inputs: []string{"imp"}, Outputs: []string{"kv"}},
		{ID: "s2", Kind: "gbk", Inputs: []string{"kv"}, Outputs: []string{"grouped"}},
		{ID: "s3", Kind: "sdk", Inputs: []string{"grouped"}},
	})
	s.BundleStarted("s1")
	s.BundleStarted("s1")
	s.BundleStarted("nope") // unknown stages are ignored
	s.BundleFinished("s1", BundleResult{Duration: 20 * time.Millisecond, ElementsIn: 1, ElementsOut: 60, BytesIn: 5, BytesOut: 600,
		PCollections: map[string]int64{"imp": 1, "kv": 60}})
	s.BundleFinished("s1", BundleResult{Duration: 2 * time.Second, Failed: true, ElementsOut: 99, PCollections: map[string]int64{"kv": 99}})
	// The consumer reports the GBK's output; the producer and consumer of
	// a PCollection may both report it.
	s.BundleStarted("s3")
	s.BundleFinished("s3", BundleResult{ElementsIn: 10, PCollections: map[string]int64{"grouped": 10}})
	s.Split("s1")
	s.BundleRetried("s1")

	snap := s.Snapshot()
	s1, s2, s3 := snap.Stages[0], snap.Stages[1], snap.Stages[2]
	if s1.BundlesRunning != 0 || s1.BundlesDone != 1 || s1.BundlesFailed != 1 || s1.BundlesRetried != 1 || s1.Splits != 1 {
		t.Errorf("s1 bundles: %+v", s1)
	}
	if s1.ElementsIn != 1 || s1.ElementsOut != 60 || s1.BytesIn != 5 || s1.BytesOut != 600 {
		t.Errorf("s1 counts (a failed bundle must not count): %+v", s1)
	}
	if s2.ElementsIn != 60 || s2.ElementsOut != 10 {
		t.Errorf("gbk in %d out %d, want 60 and 10 from its PCollections", s2.ElementsIn, s2.ElementsOut)
	}
	if s3.ElementsIn != 10 || snap.PCollections["kv"] != 60 || snap.PCollections["grouped"] != 10 {
		t.Errorf("s3 %+v, pcollections %v", s3, snap.PCollections)
	}
	// 20ms falls in the 0.05 bucket (index 3), 2s in the 5 bucket (index 7).
	if h := s1.Latency; h.Count != 2 || h.Counts[3] != 1 || h.Counts[7] != 1 {
		t.Errorf("latency histogram %+v", h)
	}
	snap.Stages[0].Latency.Counts[3] = 42
	if s.Snapshot().Stages[0].Latency.Counts[3] != 1 {
		t.Error("a snapshot shares memory with the live stats")
	}
}

func TestStatsSampleRatesAndWatermarks(t *testing.T) {
	s := NewStats()
	s.SetStages([]StageInfo{{ID: "s1", Kind: "sdk", Outputs: []string{"out"}}, {ID: "s2", Kind: "sdk", Inputs: []string{"out"}}})
	t0 := time.Unix(1000, 0)
	s.Sample(t0, map[string]int64{"s1": 5})
	s.BundleFinished("s1", BundleResult{ElementsOut: 100})
	s.BundleFinished("s2", BundleResult{ElementsIn: 50})
	s.Sample(t0.Add(2*time.Second), map[string]int64{"s1": 7, "s2": 6})
	snap := s.Snapshot()
	if got := snap.Stages[0]; got.Watermark != 7 || len(got.Rate) != 1 || got.Rate[0] != 50 {
		t.Errorf("s1 watermark %d rates %v, want 7 and [50]", got.Watermark, got.Rate)
	}
	if got := snap.Stages[1]; got.Rate[0] != 25 {
		t.Errorf("sink stage rate %v, want its input rate 25", got.Rate)
	}
	s.BundleStarted("s1")
	s.Stopped()
	if n := s.Snapshot().Stages[0].BundlesRunning; n != 0 {
		t.Errorf("%d bundles running after Stopped", n)
	}
	for i := 0; i < RateSamples+5; i++ {
		s.Sample(t0.Add(time.Duration(3+i)*time.Second), nil)
	}
	if n := len(s.Snapshot().Stages[0].Rate); n != RateSamples {
		t.Errorf("%d rate samples kept, want %d", n, RateSamples)
	}
}

// TestStatsKeepsTheLastScalingEvents: the scaling timeline keeps the
// newest maxScalingEvents changes, oldest first, and a snapshot is a copy.
func TestStatsKeepsTheLastScalingEvents(t *testing.T) {
	s := NewStats()
	for i := range maxScalingEvents + 20 {
		s.AddScaling(ScalingEvent{At: int64(i), Env: "py", From: i, To: i + 1, Why: "scale up"})
	}
	got := s.Snapshot().Scaling
	if len(got) != maxScalingEvents || got[0].At != 20 || got[len(got)-1].At != maxScalingEvents+19 {
		t.Fatalf("timeline holds %d events from %d to %d; want the last %d, 20 to %d", len(got), got[0].At, got[len(got)-1].At, maxScalingEvents, maxScalingEvents+19)
	}
	got[0].Env = "changed"
	if s.Snapshot().Scaling[0].Env != "py" {
		t.Fatal("a snapshot's timeline shares the stats' own")
	}
}
