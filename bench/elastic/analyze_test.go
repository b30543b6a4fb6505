package elastic

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

func TestPercentileIsNearestRank(t *testing.T) {
	xs := []int64{5, 1, 4, 2, 3, 6, 7, 8, 9, 10}
	for _, c := range []struct {
		p    float64
		want int64
	}{{50, 5}, {99, 10}, {10, 1}, {100, 10}, {1, 1}} {
		if got := Percentile(xs, c.p); got != c.want {
			t.Errorf("p%v = %d, want %d", c.p, got, c.want)
		}
	}
	if Percentile(nil, 99) != 0 {
		t.Error("p99 of nothing is not 0")
	}
	if xs[0] != 5 {
		t.Error("Percentile sorted its input in place")
	}
}

func TestFlipFlopsCountsReversalsOnly(t *testing.T) {
	ev := func(from, to int) Event { return Event{From: from, To: to} }
	for _, c := range []struct {
		evs  []Event
		want int
	}{
		{nil, 0},
		{[]Event{ev(1, 2), ev(2, 3)}, 0},
		{[]Event{ev(1, 3), ev(3, 2)}, 1},
		{[]Event{ev(3, 2), ev(2, 3), ev(3, 2)}, 2},
		{[]Event{ev(2, 2), ev(2, 1), ev(1, 1), ev(1, 0)}, 0},
	} {
		if got := FlipFlops(c.evs); got != c.want {
			t.Errorf("FlipFlops(%v) = %d, want %d", c.evs, got, c.want)
		}
	}
}

// samples makes one sample every 2 s whose hosts' CPU grows at the given
// cores per host, per interval.
func samples(cores [][]float64) []Sample {
	var ss []Sample
	cpu := make([]float64, len(cores[0]))
	for i, c := range cores {
		for h := range cpu {
			cpu[h] += c[h] * 2
		}
		ss = append(ss, Sample{At: float64(2 * i), Backlog: -1, HostCPU: append([]float64(nil), cpu...)})
	}
	return ss
}

func TestBusyHostsAndTimeToWorkers(t *testing.T) {
	ss := samples([][]float64{{0, 0}, {0.25, 0.01}, {0.25, 0.01}, {0.25, 0.01}, {0.25, 0.2}, {0.25, 0.25}})
	busy := BusyHosts(ss)
	if want := []int{0, 1, 1, 1, 2, 2}; !equal(busy, want) {
		t.Fatalf("BusyHosts = %v, want %v", busy, want)
	}
	up := []Event{{At: 5, From: 1, To: 2}}
	if got := TimeToWorkers(ss, busy, up, 3, 100); got != 5 {
		t.Errorf("TimeToWorkers = %v, want 5 (step at 3 s, host 2 busy at 8 s)", got)
	}
	if got := TimeToWorkers(ss, busy, nil, 3, 100); got != -1 {
		t.Errorf("TimeToWorkers without a scale-up = %v, want -1", got)
	}
	if got := TimeToWorkers(ss, busy, up, 3, 7); got != -1 {
		t.Errorf("TimeToWorkers past the step's end = %v, want -1", got)
	}
}

func TestLagIsKafkaIOsBacklogOnceReported(t *testing.T) {
	s := Sample{Produced: 1000, Read: 200, Backlog: -1}
	if Lag(s) != 800 {
		t.Errorf("without a backlog, Lag = %d, want produced - read = 800", Lag(s))
	}
	s.Backlog = 12.4
	if Lag(s) != 12 || Unread(s) != 800 {
		t.Errorf("with a backlog of 12.4, Lag = %d (want 12), Unread = %d (want 800)", Lag(s), Unread(s))
	}
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestAnalyzeSteps: a run of two steps, one scale-up in the second; the
// figures per step, and worker-seconds against the maximum.
func TestAnalyzeSteps(t *testing.T) {
	var cores [][]float64
	for i := range 31 { // 0..60 s
		c := []float64{0.25, 0}
		if i >= 20 { // 40 s on
			c[1] = 0.25
		}
		cores = append(cores, c)
	}
	ss := samples(cores)
	for i := range ss {
		ss[i].Produced = int64(i * 100)
		ss[i].Read = int64(i*100) - 50
	}
	r := &Run{
		Config:  Config{PoolEnv: "py", Initial: 1, MaxWorkers: 3},
		Steps:   []Step{{At: 0, Rate: 50}, {At: 30, Rate: 100}},
		Samples: ss,
		Events:  []Event{{At: 36, Env: "py", From: 1, To: 2}, {At: 37, Env: "java", From: 1, To: 2}},
		Outputs: []Latency{{At: 10, Ms: 800}, {At: 20, Ms: 900}, {At: 40, Ms: 5000}, {At: 50, Ms: 1200}, {At: 55, Ms: 1500}},
	}
	steps, tot := Analyze(r)
	if len(steps) != 2 {
		t.Fatalf("%d steps, want 2", len(steps))
	}
	a, b := steps[0], steps[1]
	if a.Decisions != 0 || !a.Stable || a.Workers != 1 || a.P99 != 900 || a.Counts != 2 || a.ToWorkers != -1 {
		t.Errorf("first step %+v", a)
	}
	// Converged at 36 + settle = 46 s: the 5 s count at 40 s is before it.
	if b.Decisions != 1 || b.OtherEvents != 1 || b.ToDecision != 6 || b.ToWorkers != 10 || b.Workers != 2 ||
		b.P99 != 1500 || b.StepP99 != 5000 || b.Counts != 2 || b.BusyHosts != 2 || b.EndLag != 50 {
		t.Errorf("second step %+v", b)
	}
	// One worker for 36 s (first interval ending past 36 s: 34..36), two for 24.
	if tot.Seconds != 60 || tot.MaxSeconds != 180 || tot.WorkerSeconds != 36+2*24 {
		t.Errorf("totals %+v", tot)
	}
	table := Table(r, steps, tot)
	for _, want := range []string{"| 0:30–1:00 | 100 | 1 | yes | 0 | 6 s | 10 s | 2 (2) | 1.2 / 1.5 s | 2 | 5.0 s |", "84 worker-seconds", "against 180"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
}

func TestSVGHasEveryPanelAndSeries(t *testing.T) {
	r := &Run{Config: Config{PoolEnv: "py", Initial: 1, MaxWorkers: 3, StepSeconds: 30},
		Steps: []Step{{At: 0, Rate: 50}}, Samples: samples([][]float64{{0.2}, {0.2}, {0.2}}),
		Outputs: []Latency{{At: 3, Ms: 700}}}
	svg := SVG(r)
	for _, want := range []string{"<svg", "records/s", "lag (records in Kafka)", "workers (py)", "hosts taking bundles", "p99", "</svg>"} {
		if !strings.Contains(svg, want) {
			t.Errorf("the plot lacks %q", want)
		}
	}
}

// TestLoadDecodesTheRunsRecord: testdata/smoke-run.json is a cut of the
// smoke run's JSON as validates/xlang/elastic_test.go wrote it; every
// field it holds must decode into Run (the two schemas are kept in step
// by hand).
func TestLoadDecodesTheRunsRecord(t *testing.T) {
	b, err := os.ReadFile("testdata/smoke-run.json")
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var r Run
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("the run's record does not decode strictly: %v", err)
	}
	s := r.Samples[0]
	if r.Config.PoolEnv == "" || r.Config.Rate == 0 || len(r.Steps) != 4 || s.Produced == 0 || len(s.HostCPU) != r.Config.Hosts ||
		len(s.Desired) == 0 || len(r.Events) == 0 || r.Outputs[0].At == 0 {
		t.Errorf("fields left empty: %+v", r)
	}
	if _, err := Load("testdata/smoke-run.json"); err != nil {
		t.Error(err)
	}
}
