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
	s := Sizes{Records: 1_000_000, KeySize: 10, ValueSize: 90, WordcountMB: 60, LargeWordcountMB: 600}
	want := map[string]int64{"gbk": 100e6, "cogbk": 200e6, "pardo": 100e6, "py-gbk": 100e6,
		"wordcount": 60 << 20, "wordcount-600": 600 << 20, "py-wordcount": 60 << 20, "py-cpu": 0}
	for name, n := range want {
		ws, err := SelectWorkloads(name)
		if err != nil {
			t.Fatal(err)
		}
		if got := ws[0].PayloadBytes(s); got != n {
			t.Errorf("%s: PayloadBytes = %d, want %d", name, got, n)
		}
	}
	rep := Report{Runners: []string{"beam-runner", "direct"}, Servers: map[string]bool{"beam-runner": true},
		Rows: []Row{
			{Workload: "gbk", PayloadBytes: 100e6, Cells: map[string]*Cell{"beam-runner": {ServerRSSKB: 500_000}, "direct": {}}},
			{Workload: "wordcount", PayloadBytes: 60 << 20, Cells: map[string]*Cell{"beam-runner": {ServerRSSKB: 300 << 10}, "direct": {}}},
			{Workload: "py-cpu", Cells: map[string]*Cell{"beam-runner": {ServerRSSKB: 1}, "direct": {}}},
		}}
	var buf bytes.Buffer
	WritePayloadMemory(&buf, rep)
	out := buf.String()
	for _, line := range []string{"gbk 95MiB 5.1 GB", "wordcount 60MiB 5.0 GB"} {
		if !strings.Contains(strings.Join(strings.Fields(out), " "), line) {
			t.Errorf("report lacks %q:\n%s", line, out)
		}
	}
	if strings.Contains(out, "py-cpu") || strings.Contains(out, "direct") {
		t.Errorf("report has a row without payload or a column without server:\n%s", out)
	}
}
