package beamrunner

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/beam-runner/beam-runner/runner/jobs"
)

func TestProgressLinesOnePerSDKStage(t *testing.T) {
	now := time.UnixMilli(1_800_000_000_000)
	d := jobs.Detail{
		Summary: jobs.Summary{ID: "job-1", State: "RUNNING", Start: now.Add(-90 * time.Second)},
		Stats: jobs.StatsSnapshot{Stages: []jobs.StageStats{
			{StageInfo: jobs.StageInfo{ID: "s0", Kind: "impulse"}},
			{StageInfo: jobs.StageInfo{ID: "s1", Kind: "sdk", Name: "read"}, ElementsIn: 1, ElementsOut: 5000, Rate: []float64{10, 250}, BundlesRunning: 2, BundlesDone: 7, Watermark: now.Add(-1500 * time.Millisecond).UnixMilli()},
			{StageInfo: jobs.StageInfo{ID: "s2", Kind: "gbk"}},
			{StageInfo: jobs.StageInfo{ID: "s3", Kind: "sdk", Name: strings.Repeat("x", 60)}, Watermark: 9223372036854775},
		}},
	}
	lines := progressLines(d, now)
	if len(lines) != 3 {
		t.Fatalf("got %d lines, want a header and one per SDK stage:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	for i, want := range [][]string{
		{"job-1", "RUNNING", "1m30s"},
		{"s1", "read", "5000", "250/s", "bundles 2/7", "lag 1.5s"},
		{"s3", "xxx…", "done"},
	} {
		for _, w := range want {
			if !strings.Contains(lines[i], w) {
				t.Errorf("line %d %q lacks %q", i, lines[i], w)
			}
		}
	}
}

func TestServerLoggerIsQuietByDefault(t *testing.T) {
	var buf bytes.Buffer
	l, err := serverLogger("warn", &buf)
	if err != nil {
		t.Fatal(err)
	}
	l.Info("chatty")
	l.Warn("worth seeing")
	if out := buf.String(); strings.Contains(out, "chatty") || !strings.Contains(out, "worth seeing") {
		t.Errorf("at warn the log is %q", out)
	}
	if _, err := serverLogger("loud", &buf); err == nil {
		t.Error("a bad level was accepted")
	}
}
