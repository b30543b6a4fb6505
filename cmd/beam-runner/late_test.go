package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/teststream"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"

	"github.com/beam-runner/beam-runner/runner/metrics"
	"github.com/beam-runner/beam-runner/testsupport/jobtest"
)

// TestLateDataIsCountedAndReported: an element that arrives after the
// watermark passed its window's end is dropped by the GroupByKey, and the
// job says so, where a user looks: Beam's droppedDueToLateness counter on
// the GroupByKey's transform, and a warning among the job's messages.
func TestLateDataIsCountedAndReported(t *testing.T) {
	env := jobtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	id, _, err := env.Submit(ctx, "late", func(s beam.Scope) {
		con := teststream.NewConfig()
		mustStream(t, con.AddElements(1000, "a", "b"))
		mustStream(t, con.AdvanceWatermark(11_000))
		mustStream(t, con.AddElements(2000, "late")) // its window [0, 10s) is gone
		mustStream(t, con.AdvanceWatermarkToInfinity())
		windowed := beam.WindowInto(s, window.NewFixedWindows(10*time.Second), teststream.Create(s, con))
		stats.Count(s, windowed)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := env.AwaitState(ctx, id, jobpb.JobState_DONE, time.Minute); err != nil {
		t.Fatal(err)
	}
	resp, err := env.Client.GetJobMetrics(ctx, &jobpb.GetJobMetricsRequest{JobId: id})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mi := range resp.GetMetrics().GetCommitted() {
		if r, err := metrics.Read(mi); err == nil && strings.HasPrefix(r.Labels["NAME"], "droppedDueTo") {
			got[r.Labels["NAME"]] += r.Value
		}
	}
	if got["droppedDueToLateness"] != 1 || len(got) != 1 {
		t.Errorf("drop counters %v, want droppedDueToLateness 1 alone", got)
	}
	msgs, err := jobtest.Messages(ctx, env.Client, id)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(msgs, "dropped 1 elements of windows already expired") {
		t.Errorf("no warning of the late element among the job's messages:\n%s", msgs)
	}
}

func mustStream(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
