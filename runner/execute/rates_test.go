package execute

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/coder"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/autoscale"
	"github.com/beam-runner/beam-runner/runner/engine"
	"github.com/beam-runner/beam-runner/runner/metrics"
	"github.com/beam-runner/beam-runner/runner/plan"
)

func counterInfo(urn, label, value string, n int64) *pipepb.MonitoringInfo {
	var b bytes.Buffer
	_ = coder.EncodeVarInt(n, &b)
	return &pipepb.MonitoringInfo{Urn: urn, Labels: map[string]string{label: value}, Payload: b.Bytes()}
}

// remainingInfo is a ptransform_progress:remaining info as Python's and
// Java's harnesses encode it: an iterable of one double.
func remainingInfo(transform string, v float64) *pipepb.MonitoringInfo {
	p := binary.BigEndian.AppendUint32(nil, 1)
	p = binary.BigEndian.AppendUint64(p, math.Float64bits(v))
	return &pipepb.MonitoringInfo{Urn: metrics.UrnWorkRemaining, Labels: map[string]string{"PTRANSFORM": transform}, Payload: p}
}

// execInfos are a transform's execution-time infos the way Go's harness
// reports them: each phase and their total.
func execInfos(transform string, start, process, finish int64) []*pipepb.MonitoringInfo {
	return []*pipepb.MonitoringInfo{
		counterInfo(metrics.UrnStartBundleMsecs, "PTRANSFORM", transform, start),
		counterInfo(metrics.UrnProcessBundleMsecs, "PTRANSFORM", transform, process),
		counterInfo(metrics.UrnFinishBundleMsecs, "PTRANSFORM", transform, finish),
		counterInfo(metrics.UrnTotalMsecs, "PTRANSFORM", transform, start+process+finish),
	}
}

func rateStage() *sdkStage {
	return &sdkStage{stage: &plan.Stage{ID: "s1", Inputs: []string{"in"}, Outputs: []string{"a", "b"},
		FlattenSinks: []plan.FlattenSink{{From: "c", To: "f"}}}}
}

// A bundle's execution-time infos, summed over its transforms without the
// totals counted twice, are its SDK busy time; its element counts give
// the stage's elements in (main input) and out (outputs and flatten sinks).
func TestBundleSampleFromExecutionTime(t *testing.T) {
	infos := append(execInfos("t1", 2, 30, 3), execInfos("t2", 0, 15, 0)...)
	infos = append(infos,
		counterInfo(metrics.UrnElementCount, "PCOLLECTION", "in", 100),
		counterInfo(metrics.UrnElementCount, "PCOLLECTION", "a", 60),
		counterInfo(metrics.UrnElementCount, "PCOLLECTION", "b", 40),
		counterInfo(metrics.UrnElementCount, "PCOLLECTION", "c", 10),
		counterInfo(metrics.UrnElementCount, "PCOLLECTION", "internal", 999))
	s, next := bundleSample(rateStage(), bundleReport{infos: infos, nowMs: 1200, bytesIn: 500, bytesOut: 700}, rateMark{atMs: 1000})
	want := autoscale.Sample{StartMs: 1000, EndMs: 1200, ElementsIn: 100, ElementsOut: 110,
		BytesIn: 500, BytesOut: 700, BusyMs: 50, BusyFromSDK: true, RunnerBusyMs: 200}
	if s.StartMs != want.StartMs || s.EndMs != want.EndMs || s.ElementsIn != want.ElementsIn ||
		s.ElementsOut != want.ElementsOut || s.BytesIn != want.BytesIn || s.BytesOut != want.BytesOut ||
		s.BusyMs != want.BusyMs || s.BusyFromSDK != want.BusyFromSDK || s.RunnerBusyMs != want.RunnerBusyMs {
		t.Errorf("sample = %+v\nwant     %+v", s, want)
	}
	if next.atMs != 1200 || next.in != 100 || next.out != 110 || next.busyMs != 50 || next.bytesOut != 700 {
		t.Errorf("mark = %+v", next)
	}
}

// A progress report's sample is what the bundle did since its last one:
// the SDK's figures are cumulative per bundle.
func TestBundleSampleDeltasSinceLastReport(t *testing.T) {
	mark := rateMark{atMs: 2000, in: 100, out: 50, busyMs: 40, bytesOut: 300}
	infos := append(execInfos("t1", 0, 90, 0),
		counterInfo(metrics.UrnElementCount, "PCOLLECTION", "in", 250),
		counterInfo(metrics.UrnElementCount, "PCOLLECTION", "a", 125),
		remainingInfo("t1", 4096))
	s, next := bundleSample(rateStage(), bundleReport{infos: infos, nowMs: 3000, bytesOut: 800}, mark)
	if s.StartMs != 2000 || s.EndMs != 3000 || s.ElementsIn != 150 || s.ElementsOut != 75 ||
		s.BusyMs != 50 || !s.BusyFromSDK || s.BytesOut != 500 || s.BytesIn != 0 || s.RunnerBusyMs != 1000 {
		t.Errorf("sample = %+v", s)
	}
	if !next.hasRemaining || next.remaining != 4096 {
		t.Errorf("remaining = %v (reported %v), want 4096", next.remaining, next.hasRemaining)
	}
}

// Without execution-time infos, or with only zeros (a harness that does
// not sample, or a bundle shorter than its millisecond resolution), the
// bundle's wall time is its busy time and the sample says so.
func TestBundleSampleFallsBackToWallTime(t *testing.T) {
	for name, infos := range map[string][]*pipepb.MonitoringInfo{
		"none":  {counterInfo(metrics.UrnElementCount, "PCOLLECTION", "in", 7)},
		"zeros": append(execInfos("t1", 0, 0, 0), counterInfo(metrics.UrnElementCount, "PCOLLECTION", "in", 7)),
	} {
		s, _ := bundleSample(rateStage(), bundleReport{infos: infos, nowMs: 1300}, rateMark{atMs: 1000})
		if s.BusyFromSDK || s.BusyMs != 300 || s.RunnerBusyMs != 300 || s.ElementsIn != 7 {
			t.Errorf("%s: sample = %+v, want 300 ms of runner busy time", name, s)
		}
	}
}

// A harness's bad payloads and counts going backwards (a report racing
// the final one) never make a negative sample, which the window rejects.
func TestBundleSampleNeverNegative(t *testing.T) {
	mark := rateMark{atMs: 5000, in: 100, out: 100, busyMs: 80, bytesOut: 900}
	infos := []*pipepb.MonitoringInfo{
		counterInfo(metrics.UrnElementCount, "PCOLLECTION", "in", 10),
		{Urn: metrics.UrnProcessBundleMsecs, Labels: map[string]string{"PTRANSFORM": "t"}, Payload: []byte{0xff}},
		{Urn: metrics.UrnWorkRemaining, Payload: []byte{0, 0, 0, 9}},
	}
	s, next := bundleSample(rateStage(), bundleReport{infos: infos, nowMs: 4000, bytesOut: 10}, mark)
	if err := autoscale.NewWindow(0).Add(s); err != nil {
		t.Errorf("sample %+v rejected: %v", s, err)
	}
	if next.hasRemaining {
		t.Errorf("a truncated progress payload was read as remaining work %v", next.remaining)
	}
}

// A bundle that read elements within one millisecond of the clocks
// (runner and SDK both count whole ms) is charged that millisecond, so its
// stage has a processing rate; seen as a flake of TestStageRatesExported,
// whose GroupByKey stage read 10 elements in "0 ms".
func TestSubMillisecondBundleIsCharged(t *testing.T) {
	infos := append(execInfos("t1", 0, 0, 0),
		counterInfo(metrics.UrnElementCount, "PCOLLECTION", "in", 10))
	s, next := bundleSample(rateStage(), bundleReport{infos: infos, nowMs: 1000}, rateMark{atMs: 1000})
	if s.BusyMs != 1 || s.RunnerBusyMs != 1 || s.EndMs-s.StartMs != 1 || s.ElementsIn != 10 {
		t.Errorf("sample = %+v; want 10 elements in, charged 1 ms over a 1 ms span", s)
	}
	if next.atMs != 1000 {
		t.Errorf("mark at %d ms; the floor must not move the mark", next.atMs)
	}
	idle, _ := bundleSample(rateStage(), bundleReport{nowMs: 1000}, rateMark{atMs: 1000})
	if idle.BusyMs != 0 || idle.EndMs != idle.StartMs {
		t.Errorf("a report of no elements was charged: %+v", idle)
	}
}

// A source bundle that ended with a residual (flow control checkpointed
// it) keeps its last reported remaining work in the stage's backlog while
// the residual waits; once the residual resumes and reports, its own
// figure replaces it.
func TestBacklogKeptWhileResidualIsHeld(t *testing.T) {
	d := &driver{rates: newStageRates(10*time.Second, true), inflight: map[int]*inflight{}}
	ss := rateStage()
	held := &inflight{b: engine.Bundle{ID: 1, Stage: "read"}, ss: ss,
		rate: rateMark{remaining: 1_790_000, hasRemaining: true}}
	d.parkBacklog(held, 1)
	if got := d.rates.backlog["read"]; got != 1_790_000 {
		t.Fatalf("backlog while the residual is held: %v, want the last reported 1790000", got)
	}
	resumed := &inflight{b: engine.Bundle{ID: 2, Stage: "read"}, ss: ss}
	d.inflight[2] = resumed
	d.noteRates(resumed, []*pipepb.MonitoringInfo{remainingInfo("read", 1_780_000)}, false)
	if got := d.rates.backlog["read"]; got != 1_780_000 {
		t.Errorf("backlog once the residual resumed: %v, want its own 1780000", got)
	}
}
