package jobs

import (
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/metrics"
)

// StageRates is a stage's measured rates over the executor's sliding rate
// window (runner/autoscale): DS2's and Flink's figures. A stage that ran
// no SDK bundle in the job has none.
type StageRates struct {
	WindowMs int64 `json:"window_ms"` // wall time the figures cover
	// Slots is how many bundles the stage ran at once at most: the per-slot
	// busy/idle/back-pressured figures divide by it.
	Slots        int     `json:"slots"`
	BusyMsPerSec float64 `json:"busy_ms_per_sec"`
	IdleMsPerSec float64 `json:"idle_ms_per_sec"`
	// BackPressuredMsPerSec is nil while no flow control measures it, so
	// that "not measured" never reads as a measured zero.
	BackPressuredMsPerSec *float64 `json:"backpressured_ms_per_sec,omitempty"`
	// BusySource says where busy time came from: "sdk" (execution-time
	// metrics), "runner" (bundle wall time) or a fallback (autoscale).
	BusySource string `json:"busy_source,omitempty"`
	// ProcessingRate (λp) and OutputRate (λo) are elements in and out per
	// second of busy time, undefined (0, and not exported) when no busy
	// time was measured: bundles shorter than the clock's millisecond.
	// Selectivity is out/in.
	ProcessingRate float64 `json:"processing_rate"`
	OutputRate     float64 `json:"output_rate"`
	Selectivity    float64 `json:"selectivity"`
	// ObservedIn and ObservedOut are elements per second of wall time.
	ObservedIn  float64 `json:"observed_in"`
	ObservedOut float64 `json:"observed_out"`
	// Backlog is the stage's splittable DoFns' latest remaining work (in
	// the SDK's work units); nil if none reported any.
	Backlog *float64 `json:"backlog,omitempty"`
}

// SetRates publishes each stage's rates (by stage id) at atMs; stages
// not in rates keep what they had.
func (s *Stats) SetRates(atMs int64, rates map[string]StageRates) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.ratesAt = atMs
	for id, r := range rates {
		if st := s.mu.byID[id]; st != nil {
			st.Rates = &r
		}
	}
}

// Runner-side rate metrics in the Job API's metrics: gauges labelled with
// the job's STAGE id, under the runner's own URN namespace.
const (
	UrnStageBusy          = "beam-runner:metric:stage_busy_ms_per_second:v1"
	UrnStageIdle          = "beam-runner:metric:stage_idle_ms_per_second:v1"
	UrnStageBackPressured = "beam-runner:metric:stage_backpressured_ms_per_second:v1"
	UrnStageProcRate      = "beam-runner:metric:stage_processing_rate:v1"
	UrnStageOutputRate    = "beam-runner:metric:stage_output_rate:v1"
	UrnStageObservedIn    = "beam-runner:metric:stage_observed_input_rate:v1"
	UrnStageBacklog       = "beam-runner:metric:stage_backlog:v1"
)

// rateInfos are the stages' rates as Job API monitoring infos; figures
// not measured are left out.
func rateInfos(snap StatsSnapshot) []*pipepb.MonitoringInfo {
	atMs := snap.RatesAt
	var out []*pipepb.MonitoringInfo
	for _, st := range snap.Stages {
		r := st.Rates
		if r == nil {
			continue
		}
		add := func(urn string, v float64) {
			out = append(out, metrics.Gauge(urn, map[string]string{"STAGE": st.ID}, atMs, v))
		}
		add(UrnStageBusy, r.BusyMsPerSec)
		add(UrnStageIdle, r.IdleMsPerSec)
		if r.BackPressuredMsPerSec != nil {
			add(UrnStageBackPressured, *r.BackPressuredMsPerSec)
		}
		if r.BusyMsPerSec > 0 {
			add(UrnStageProcRate, r.ProcessingRate)
			add(UrnStageOutputRate, r.OutputRate)
		}
		add(UrnStageObservedIn, r.ObservedIn)
		if r.Backlog != nil {
			add(UrnStageBacklog, *r.Backlog)
		}
	}
	return out
}
