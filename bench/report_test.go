package bench

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

var testRunners = []Runner{{"beam-runner", true}, {"prism", true}, {"direct", false}}

func TestCheckOutputs(t *testing.T) {
	none := map[string]bool{"direct": true}
	cases := []struct {
		name  string
		cells map[string]*Cell
		want  string
	}{
		{"equal", map[string]*Cell{
			"beam-runner": {Runs: 1, Signatures: []string{"a"}},
			"prism":       {Runs: 1, Signatures: []string{"a"}},
			"direct":      {Runs: 1},
		}, "same: beam-runner=prism"},
		{"differ", map[string]*Cell{
			"beam-runner": {Runs: 1, Signatures: []string{"b"}},
			"prism":       {Runs: 1, Signatures: []string{"a"}},
			"direct":      {Runs: 1},
		}, "DIFF beam-runner≠prism"},
		{"one failed", map[string]*Cell{
			"beam-runner": {Runs: 1, Failed: 1},
			"prism":       {Runs: 1, Signatures: []string{"a"}},
			"direct":      {Runs: 1},
		}, "n/a"},
		{"unstable", map[string]*Cell{
			"beam-runner": {Runs: 2, Signatures: []string{"a", "b"}},
			"prism":       {Runs: 1, Signatures: []string{"a"}},
			"direct":      {Runs: 1},
		}, "same: beam-runner=prism (beam-runner varies across rounds)"},
		{"missing output", map[string]*Cell{
			"beam-runner": {Runs: 1},
			"prism":       {Runs: 1, Signatures: []string{"a"}},
			"direct":      {Runs: 1},
		}, "n/a (beam-runner: no output)"},
	}
	for _, c := range cases {
		if got := CheckOutputs(c.cells, []string{"beam-runner", "prism", "direct"}, none); got != c.want {
			t.Errorf("%s: CheckOutputs = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestSummarizeAndWriteReport(t *testing.T) {
	ws, _ := SelectWorkloads("gbk,wordcount")
	s := time.Second
	results := []Result{
		{Workload: "gbk", Runner: "beam-runner", Err: "boom: marker size"},
		{Workload: "gbk", Runner: "prism", Wall: 2 * s, ServerRSSKB: 2048, ClientRSSKB: 1024, Signature: "n1=1"},
		{Workload: "gbk", Runner: "direct", Wall: 1 * s, ClientRSSKB: 3072},
		{Workload: "wordcount", Runner: "beam-runner", Wall: 3 * s, Signature: "w"},
		{Workload: "wordcount", Runner: "beam-runner", Wall: 5 * s, Signature: "w"},
		{Workload: "wordcount", Runner: "prism", Wall: 2 * s, Signature: "w"},
		{Workload: "wordcount", Runner: "direct", Wall: 4 * s, Signature: "x"},
	}
	var buf bytes.Buffer
	WriteReport(&buf, Summarize(results, ws, testRunners))
	out := buf.String()
	for _, want := range []string{
		"beam-runner/prism", "beam-runner/direct",
		"FAIL", "2.00s", "4.00s", "2.00x", "1.00x",
		"DIFF beam-runner=prism≠direct",
		"beam-runner server", "direct client", "3MiB",
		"gbk/beam-runner: boom: marker size",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "direct server") {
		t.Errorf("direct has no server column:\n%s", out)
	}
}

func TestSelect(t *testing.T) {
	ws, err := SelectWorkloads("wordcount, gbk")
	if err != nil || len(ws) != 2 || ws[0].Name != "gbk" {
		t.Errorf("SelectWorkloads = %v, %v", ws, err)
	}
	if _, err := SelectWorkloads("gbk,nope"); err == nil {
		t.Error("want error for unknown workload")
	}
	if _, err := SelectRunners(""); err == nil {
		t.Error("want error for empty runner list")
	}
}
