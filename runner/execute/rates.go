package execute

import (
	"time"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/autoscale"
	"github.com/beam-runner/beam-runner/runner/jobs"
	"github.com/beam-runner/beam-runner/runner/metrics"
)

// Stage rates (issue 36): each finished bundle and progress report adds
// one sample to its stage's autoscale.Window; once a second the driver
// publishes every window's rates to the job's statistics, which the web
// UI, /metrics and the Job API's metrics read. Only the driver goroutine
// uses these. Adding a sample is amortized O(1) (autoscale.Window);
// reading the rates, once a second, O(stages × samples in a window).

// stageRates holds one window per stage (by its statistics id).
type stageRates struct {
	lengthMs int64
	windows  map[string]*autoscale.Window
	backlog  map[string]float64 // latest remaining work reported, by stage
	// parked is, per stage, the last remaining work reported by bundles
	// that ended with residuals not yet resumed (one entry a residual,
	// oldest first): a source flow control holds runs no bundle, and its
	// backlog must not read 0 meanwhile.
	parked map[string][]float64
	// backPressureMeasured: flow control is on, so the windows' back-
	// pressured time is measured (noteHeld) and published; without it the
	// figure is left out, never shown as 0.
	backPressureMeasured bool
	warned               bool // a rejected sample was logged
	// heldMs is each stage's engine.PressureStats.HeldMs at heldAtMs, the
	// last noteHeld.
	heldMs   map[string]int64
	heldAtMs int64
}

func newStageRates(window time.Duration, flowControl bool) *stageRates {
	return &stageRates{lengthMs: window.Milliseconds(), windows: map[string]*autoscale.Window{},
		backlog: map[string]float64{}, parked: map[string][]float64{}, backPressureMeasured: flowControl, heldMs: map[string]int64{}}
}

// rateMark is what a running bundle has reported to its stage's window so
// far (the SDK's figures are cumulative per bundle; samples are deltas).
type rateMark struct {
	atMs, in, out, busyMs, bytesOut int64
	remaining                       float64 // latest ptransform_progress remaining
	hasRemaining                    bool
}

// bundleReport is one report of a bundle: its cumulative monitoring infos
// and bytes at nowMs; bytesIn is counted once, by the final report.
type bundleReport struct {
	infos             []*pipepb.MonitoringInfo
	nowMs             int64
	bytesIn, bytesOut int64
}

// bundleSample turns a report into the sample of what the bundle did
// since mark, and the new mark. Busy time is the SDK's execution time
// when it reported a positive figure (BusyFromSDK); otherwise the
// bundle's wall time, which is also RunnerBusyMs: the runner does not
// measure time a bundle waits on it (state, side inputs, data), so wall
// time is its estimate.
func bundleSample(ss *sdkStage, rep bundleReport, mark rateMark) (autoscale.Sample, rateMark) {
	in, out := stageElements(ss, elementCounts(rep.infos))
	next := mark
	next.atMs = max(rep.nowMs, mark.atMs)
	next.in, next.out, next.bytesOut = max(in, mark.in), max(out, mark.out), max(rep.bytesOut, mark.bytesOut)
	s := autoscale.Sample{StartMs: mark.atMs, EndMs: next.atMs,
		ElementsIn: next.in - mark.in, ElementsOut: next.out - mark.out,
		BytesIn: max(rep.bytesIn, 0), BytesOut: next.bytesOut - mark.bytesOut,
		RunnerBusyMs: next.atMs - mark.atMs}
	s.BusyMs = s.RunnerBusyMs
	if sdk, ok := metrics.BusyMs(rep.infos); ok && sdk > 0 {
		next.busyMs = max(sdk, mark.busyMs)
		s.BusyMs, s.BusyFromSDK = next.busyMs-mark.busyMs, true
	}
	clockFloor(&s)
	if rem, ok := metrics.WorkRemaining(rep.infos); ok {
		next.remaining, next.hasRemaining = rem, true
	}
	return s, next
}

// clockFloor charges a sample that moved elements at least the clocks'
// resolution, 1 ms: both the runner's clock and the SDK's execution time
// count whole milliseconds, so a sub-millisecond bundle would otherwise
// have done work in no time, and its stage no processing rate at all.
func clockFloor(s *autoscale.Sample) {
	if s.ElementsIn == 0 && s.ElementsOut == 0 {
		return
	}
	if s.EndMs == s.StartMs {
		s.EndMs++
	}
	s.RunnerBusyMs = max(s.RunnerBusyMs, 1)
	s.BusyMs = max(s.BusyMs, 1)
}

// stageElements is a stage's input and output elements in a bundle's
// element counts: its main input, and its outputs and flatten sinks.
func stageElements(ss *sdkStage, counts map[string]int64) (in, out int64) {
	if ss.treeOf != "" || len(ss.stage.Inputs) == 0 {
		return 0, 0 // a combine's partial groups are no PCollection's elements
	}
	in = counts[ss.stage.Inputs[0]]
	for _, pc := range ss.stage.Outputs {
		out += counts[pc]
	}
	for _, fs := range ss.stage.FlattenSinks {
		out += counts[fs.From]
	}
	return in, out
}

// noteRates adds a bundle's report to its stage's window. final is the
// bundle's last report, which counts its input bytes.
func (d *driver) noteRates(rec *inflight, infos []*pipepb.MonitoringInfo, final bool) {
	rep := bundleReport{infos: infos, nowMs: time.Now().UnixMilli(), bytesOut: rec.outBytes.Load()}
	if final {
		for _, c := range rec.b.Input {
			rep.bytesIn += int64(len(c))
		}
	}
	s, next := bundleSample(rec.ss, rep, rec.rate)
	first := next.hasRemaining && !rec.rate.hasRemaining
	rec.rate = next
	stage := statsStage(rec)
	d.addSample(stage, s)
	if first && len(d.rates.parked[stage]) > 0 {
		// A residual resumed: it reports its own remaining work now.
		d.rates.parked[stage] = d.rates.parked[stage][1:]
	}
	if next.hasRemaining {
		d.noteBacklog(stage)
	}
}

// parkBacklog keeps the remaining work a bundle last reported when it
// ended with n residuals, shared among them, in its stage's backlog until
// they resume.
func (d *driver) parkBacklog(rec *inflight, n int) {
	if n == 0 || !rec.rate.hasRemaining {
		return
	}
	stage := statsStage(rec)
	for range n {
		d.rates.parked[stage] = append(d.rates.parked[stage], rec.rate.remaining/float64(n))
	}
	d.noteBacklog(stage)
}

// addSample adds s to stage's window, made on its first sample.
func (d *driver) addSample(stage string, s autoscale.Sample) {
	w := d.rates.windows[stage]
	if w == nil {
		w = autoscale.NewWindow(d.rates.lengthMs)
		d.rates.windows[stage] = w
	}
	if err := w.Add(s); err != nil && !d.rates.warned {
		d.rates.warned = true
		d.r.log.Warn("stage rates: sample rejected", "stage", stage, "err", err)
	}
}

// noteHeld adds to each stage's window, as a sample of no work, the time
// flow control held it since the last call: its back-pressured time.
func (d *driver) noteHeld(nowMs int64) {
	if !d.rates.backPressureMeasured {
		return
	}
	since := d.rates.heldAtMs
	d.rates.heldAtMs = nowMs
	for stage, ps := range d.eng.Pressure() {
		last, seen := d.rates.heldMs[stage]
		d.rates.heldMs[stage] = ps.HeldMs
		if seen && since > 0 && ps.HeldMs > last && nowMs > since {
			d.addSample(stage, autoscale.Sample{StartMs: since, EndMs: nowMs, BackPressuredMs: min(ps.HeldMs-last, nowMs-since)})
		}
	}
}

// noteBacklog sets a stage's backlog to the latest remaining work of its
// running bundles that reported one and of its parked residuals.
func (d *driver) noteBacklog(stage string) {
	sum := 0.0
	for _, r := range d.rates.parked[stage] {
		sum += r
	}
	for _, rec := range d.inflight {
		if rec.rate.hasRemaining && statsStage(rec) == stage {
			sum += rec.rate.remaining
		}
	}
	d.rates.backlog[stage] = sum
}

// publishRates hands every stage's rates, as of now, to the job's
// statistics.
func (d *driver) publishRates() {
	now := time.Now().UnixMilli()
	d.noteHeld(now)
	out := make(map[string]jobs.StageRates, len(d.rates.windows))
	for stage, w := range d.rates.windows {
		slots := max(d.r.concurrency.peak[stage], 1)
		out[stage] = d.rates.toStats(stage, w.Rates(now, slots), slots)
	}
	d.r.job.Stats().SetRates(now, out)
}

func (sr *stageRates) toStats(stage string, r autoscale.Rates, slots int) jobs.StageRates {
	js := jobs.StageRates{WindowMs: r.WallMs, Slots: slots, BusyMsPerSec: r.BusyMsPerSec,
		IdleMsPerSec: r.IdleMsPerSec, BusySource: r.BusySource, ProcessingRate: r.ProcessingRate,
		OutputRate: r.OutputRate, Selectivity: r.Selectivity, ObservedIn: r.ObservedIn, ObservedOut: r.ObservedOut}
	if sr.backPressureMeasured {
		bp := r.BackPressuredMsPerSec
		js.BackPressuredMsPerSec = &bp
	}
	if b, ok := sr.backlog[stage]; ok {
		js.Backlog = &b
	}
	return js
}
