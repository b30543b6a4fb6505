package bench

import (
	"bytes"
	"strings"
	"testing"
)

func TestLimitedRunnerFlags(t *testing.T) {
	c := &Config{WorkDir: t.TempDir(), MemoryLimit: "64MiB"}
	lim, err := SelectRunners(LimitedRunner)
	if err != nil || len(lim) != 1 || lim[0].BinaryName() != "beam-runner" {
		t.Fatalf("SelectRunners(%s) = %v, %v", LimitedRunner, lim, err)
	}
	got := strings.Join(serverFlags(c, lim[0], "gbk-x-1"), " ")
	if !strings.Contains(got, "--memory_limit=64MiB") || !strings.Contains(got, "--state_dir=") {
		t.Errorf("limited flags = %q", got)
	}
	if got := serverFlags(c, Runner{"beam-runner", true}, "t"); len(got) != 1 {
		t.Errorf("beam-runner flags = %q, want only its state dir", got)
	}
	if got := serverFlags(c, Runner{"prism", true}, "t"); got != nil {
		t.Errorf("prism flags = %q, want none", got)
	}
}

func TestPayloadMemory(t *testing.T) {
	s := Sizes{Records: 1_000_000, KeySize: 10, ValueSize: 90}
	if s.PayloadBytes("gbk") != 100e6 || s.PayloadBytes("cogbk") != 200e6 || s.PayloadBytes("pardo") != 0 {
		t.Fatalf("PayloadBytes: %d %d %d", s.PayloadBytes("gbk"), s.PayloadBytes("cogbk"), s.PayloadBytes("pardo"))
	}
	rep := Report{Runners: []string{"beam-runner", "direct"}, Servers: map[string]bool{"beam-runner": true},
		Rows: []Row{
			{Workload: "gbk", Cells: map[string]*Cell{"beam-runner": {ServerRSSKB: 500_000}, "direct": {}}},
			{Workload: "pardo", Cells: map[string]*Cell{"beam-runner": {ServerRSSKB: 1}, "direct": {}}},
		}}
	var buf bytes.Buffer
	WritePayloadMemory(&buf, rep, s)
	out := buf.String()
	if !strings.Contains(out, "gbk") || !strings.Contains(out, "5.1 GB") || strings.Contains(out, "pardo") {
		t.Errorf("report:\n%s", out)
	}
}
