package bench

import (
	"bytes"
	"strings"
	"testing"
)

// tiny.py's first job (the server's start) is left out; server timelines
// are kept apart; a job that did not end DONE is an error, not a row.
func TestParseTiny(t *testing.T) {
	out := `INFO noise
{"label": "br", "job": 0, "state": "DONE", "total": 2.5, "bundles": 5}
{"label": "br", "job": 1, "state": "DONE", "total": 0.4, "bundles": 5, "last_bundle_to_done": null}
{"label": "br", "job": 2, "state": "DONE", "total": 0.2, "bundles": 5}
{"label": "br", "server_job": 0, "server": {"total_ms": 235.5, "stages_ms": 200}}
`
	run, err := ParseTiny(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Client) != 2 || run.Client[0]["total"] != 0.4 || len(run.Server) != 1 || run.Server[0]["stages_ms"] != 200 {
		t.Fatalf("ParseTiny = %+v", run)
	}
	if _, ok := run.Client[0]["last_bundle_to_done"]; ok {
		t.Errorf("a phase not seen (null) became a number: %v", run.Client[0])
	}
	m, names := MedianPhases(run.Client)
	if m["total"] < 0.2999 || m["total"] > 0.3001 || strings.Join(names, ",") != "bundles,total" {
		t.Errorf("MedianPhases = %v %v; want total 0.3 (mean of the middle two)", m, names)
	}
	if _, err := ParseTiny(strings.NewReader(`{"job": 3, "state": "FAILED"}`)); err == nil {
		t.Error("a FAILED job parsed without error")
	}
}

func TestParseServerTimelinesAndTable(t *testing.T) {
	log := `time=x level=DEBUG msg="job timeline" job=j1 total_ms=30.5 plan_ms=0.2 stages_ms=8
time=x level=INFO msg="job ended" job_id=j1 state=DONE
time=x level=DEBUG msg="job timeline" job=j2 total_ms=40.5 plan_ms=0.4 stages_ms=10
`
	tl := ParseServerTimelines(strings.NewReader(log))
	if len(tl) != 2 || tl[1]["total_ms"] != 40.5 {
		t.Fatalf("ParseServerTimelines = %v", tl)
	}
	var b bytes.Buffer
	WritePhaseTable(&b, []string{"total", "plan_ms", "bundles"}, []string{"a", "b"},
		map[string]Phases{"a": {"total": 0.0381, "plan_ms": 0.2, "bundles": 5}, "b": {"total": 0.3}})
	want := "| phase | a | b |\n|---|---|---|\n| total | 38.1 | 300.0 |\n| plan_ms | 0.2 | - |\n| bundles | 5 | - |\n"
	if b.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", b.String(), want)
	}
}
