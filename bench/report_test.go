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
	WriteReport(&buf, Summarize(results, &Config{Workloads: ws, Runners: testRunners}))
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

// TestSummarizeMedians: a cell's time and both peak RSS figures are the
// medians over its rounds, not the worst round; a failed round's peak
// counts, its time does not.
func TestSummarizeMedians(t *testing.T) {
	ws, _ := SelectWorkloads("gbk")
	s := time.Second
	results := []Result{
		{Workload: "gbk", Runner: "beam-runner", Wall: 9 * s, ServerRSSKB: 900 << 10, ClientRSSKB: 10 << 10, Signature: "n"},
		{Workload: "gbk", Runner: "beam-runner", Wall: 2 * s, ServerRSSKB: 100 << 10, ClientRSSKB: 30 << 10, Signature: "n"},
		{Workload: "gbk", Runner: "beam-runner", Wall: 3 * s, ServerRSSKB: 200 << 10, ClientRSSKB: 20 << 10, Signature: "n"},
		{Workload: "gbk", Runner: "beam-runner", ServerRSSKB: 150 << 10, ClientRSSKB: 25 << 10, Err: "killed"},
	}
	rep := Summarize(results, &Config{Workloads: ws, Runners: testRunners[:1]})
	c := rep.Rows[0].Cells["beam-runner"]
	if c.Median != 3*s || c.ServerRSSKB != 175<<10 || c.ClientRSSKB != 22<<10+512 || c.Failed != 1 || c.Runs != 4 {
		t.Errorf("cell = %+v; want median 3s, server 175 MiB, client 22.5 MiB, 1 of 4 failed", c)
	}
}

// TestLargeWordcountRow: wordcount-600 runs on beam-runner alone, and its
// check compares the output with the count of the input.
func TestLargeWordcountRow(t *testing.T) {
	ws, _ := SelectWorkloads("wordcount-600")
	for _, r := range append(testRunners, Runner{LimitedRunner, true}) {
		if got, want := ws[0].RunsOn(r), r.BinaryName() == "beam-runner"; got != want {
			t.Errorf("wordcount-600 runs on %s: %v, want %v", r.Name, got, want)
		}
	}
	s := time.Second
	c := &Config{Workloads: ws, Runners: testRunners, Expected: map[string]string{"wordcount-600": "in"}}
	for _, tc := range []struct {
		sigs []string
		want string
	}{
		{[]string{"in", "in"}, "= input count: beam-runner"},
		{[]string{"in", "off"}, "DIFF from the input's count: beam-runner"},
		{nil, "n/a (beam-runner: no output)"},
	} {
		var results []Result
		for _, sig := range tc.sigs {
			results = append(results, Result{Workload: "wordcount-600", Runner: "beam-runner", Wall: s, Signature: sig})
		}
		if tc.sigs == nil {
			results = []Result{{Workload: "wordcount-600", Runner: "beam-runner", Wall: s}}
		}
		rep := Summarize(results, c)
		if got := rep.Rows[0].Check; got != tc.want {
			t.Errorf("signatures %v: check %q, want %q", tc.sigs, got, tc.want)
		}
		var buf bytes.Buffer
		WriteReport(&buf, rep)
		if !strings.Contains(buf.String(), "wordcount-600") {
			t.Errorf("report lacks the row:\n%s", buf.String())
		}
	}
}
