package jobs

import (
	"maps"
	"math"
	"slices"
	"sync"
	"time"
)

// Stats is a job's live execution statistics. The executor updates it as
// bundles run; the web UI, /metrics and the command line read snapshots of
// it through the Service. Safe for concurrent use.
type Stats struct {
	mu struct {
		sync.Mutex
		stages []*StageStats // in plan order
		byID   map[string]*StageStats
		// reports holds the elements each stage's bundles counted per
		// PCollection: a PCollection between two SDK stages is counted by
		// both, one read by a runner stage only by its producer.
		reports map[string]map[string]int64 // stage -> PCollection -> elements
		workers int
		sampled time.Time // last Sample
		ratesAt int64     // last SetRates, Unix ms
		desired map[string]int
		scaling []ScalingEvent // oldest first, the last maxScalingEvents
		history history        // checkpoints and failures (history.go)
	}
}

// StageInfo describes one fused stage; fixed once the job is planned.
type StageInfo struct {
	ID         string   `json:"id"`
	Name       string   `json:"name"`
	Kind       string   `json:"kind"` // sdk, impulse, gbk, flatten, ...
	Env        string   `json:"env,omitempty"`
	Transforms []string `json:"transforms"` // unique names, in order
	Inputs     []string `json:"inputs"`     // PCollection ids read (main input first)
	SideInputs []string `json:"side_inputs,omitempty"`
	Outputs    []string `json:"outputs"`
}

// StageStats is a stage's description and its counters so far.
type StageStats struct {
	StageInfo
	// Watermark is the stage's output watermark in Unix milliseconds;
	// math.MinInt64 before any is known, math.MaxInt64 once complete.
	Watermark   int64 `json:"watermark"`
	ElementsIn  int64 `json:"elements_in"`
	ElementsOut int64 `json:"elements_out"`
	BytesIn     int64 `json:"bytes_in"`
	BytesOut    int64 `json:"bytes_out"`

	BundlesRunning int64 `json:"bundles_running"`
	BundlesDone    int64 `json:"bundles_done"`
	BundlesFailed  int64 `json:"bundles_failed"`
	BundlesRetried int64 `json:"bundles_retried"`
	Splits         int64 `json:"splits"`

	Latency Histogram `json:"latency"`
	// Rate holds the last RateSamples elements-per-second samples, oldest
	// first, taken every Sample call.
	Rate []float64 `json:"rate"`
	// Rates are the stage's measured rates (rates.go); nil if none yet.
	Rates *StageRates `json:"rates,omitempty"`

	lastCount int64 // elements counted at the previous Sample
}

// RateSamples bounds the elements/s history kept per stage.
const RateSamples = 60

// LatencyBuckets are the upper bounds, in seconds, of the bundle latency
// histogram (the last, implicit bucket is +Inf).
var LatencyBuckets = []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 60}

// Histogram counts observations per bucket of LatencyBuckets, not
// cumulatively; Counts has one more entry, for +Inf.
type Histogram struct {
	Counts []uint64 `json:"counts"`
	Sum    float64  `json:"sum"`
	Count  uint64   `json:"count"`
}

func (h *Histogram) observe(v float64) {
	if h.Counts == nil {
		h.Counts = make([]uint64, len(LatencyBuckets)+1)
	}
	i, _ := slices.BinarySearch(LatencyBuckets, v)
	h.Counts[i]++
	h.Sum += v
	h.Count++
}

// NewStats returns empty statistics.
func NewStats() *Stats {
	s := &Stats{}
	s.mu.byID = map[string]*StageStats{}
	s.mu.reports = map[string]map[string]int64{}
	return s
}

// SetStages describes the job's stages; earlier counters are dropped.
func (s *Stats) SetStages(infos []StageInfo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.stages = s.mu.stages[:0]
	s.mu.byID = map[string]*StageStats{}
	for _, in := range infos {
		st := &StageStats{StageInfo: in, Watermark: math.MinInt64}
		s.mu.stages = append(s.mu.stages, st)
		s.mu.byID[in.ID] = st
	}
}

// SetWorkers records how many SDK workers the job has.
func (s *Stats) SetWorkers(n int) {
	s.mu.Lock()
	s.mu.workers = n
	s.mu.Unlock()
}

// SetDesiredWorkers records the autoscaler's last decision: workers per
// environment.
func (s *Stats) SetDesiredWorkers(desired map[string]int) {
	s.mu.Lock()
	s.mu.desired = maps.Clone(desired)
	s.mu.Unlock()
}

// ScalingEvent is one change the autoscaler made to an environment's
// workers, for the web UI's scaling timeline.
type ScalingEvent struct {
	At   int64  `json:"at"` // Unix ms
	Env  string `json:"env"`
	From int    `json:"from"`
	To   int    `json:"to"`
	Why  string `json:"why"`
}

// maxScalingEvents bounds the timeline a long job keeps: the policy
// changes workers at most once an interval, so this is hours of changes.
const maxScalingEvents = 100

// AddScaling records a change the autoscaler made.
func (s *Stats) AddScaling(ev ScalingEvent) {
	s.mu.Lock()
	s.mu.scaling = append(s.mu.scaling, ev)
	if n := len(s.mu.scaling); n > maxScalingEvents {
		s.mu.scaling = slices.Clone(s.mu.scaling[n-maxScalingEvents:])
	}
	s.mu.Unlock()
}

// update runs f on a stage's stats under the lock; unknown stages are
// ignored (a report racing a re-plan must not crash the job).
func (s *Stats) update(stage string, f func(*StageStats)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.mu.byID[stage]; st != nil {
		f(st)
	}
}

// BundleStarted counts a bundle handed to a worker.
func (s *Stats) BundleStarted(stage string) {
	s.update(stage, func(st *StageStats) { st.BundlesRunning++ })
}

// BundleResult is what one finished bundle contributes.
type BundleResult struct {
	Duration          time.Duration
	Failed            bool
	ElementsIn        int64
	ElementsOut       int64
	BytesIn, BytesOut int64
	// PCollections counts the elements this bundle produced per PCollection.
	PCollections map[string]int64
}

// BundleFinished counts a finished bundle and what it processed.
func (s *Stats) BundleFinished(stage string, r BundleResult) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.mu.byID[stage]
	if st == nil {
		return
	}
	st.BundlesRunning = max(st.BundlesRunning-1, 0)
	st.Latency.observe(r.Duration.Seconds())
	if r.Failed {
		st.BundlesFailed++
		return
	}
	st.BundlesDone++
	st.ElementsIn += r.ElementsIn
	st.ElementsOut += r.ElementsOut
	st.BytesIn += r.BytesIn
	st.BytesOut += r.BytesOut
	rep := s.mu.reports[stage]
	if rep == nil {
		rep = map[string]int64{}
		s.mu.reports[stage] = rep
	}
	for pc, n := range r.PCollections {
		rep[pc] += n
	}
}

// BundleRetried counts a failed bundle that is run again.
func (s *Stats) BundleRetried(stage string) {
	s.update(stage, func(st *StageStats) { st.BundlesRetried++ })
}

// Split counts a dynamic split that gave work back.
func (s *Stats) Split(stage string) {
	s.update(stage, func(st *StageStats) { st.Splits++ })
}

// Stopped marks the job's execution over: nothing is running any more.
func (s *Stats) Stopped() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.mu.stages {
		st.BundlesRunning = 0
	}
}

// Sample records each stage's watermark (from wm, by stage id) and an
// elements/s sample over the time since the previous call.
func (s *Stats) Sample(now time.Time, wm map[string]int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	dt := now.Sub(s.mu.sampled).Seconds()
	first := s.mu.sampled.IsZero()
	s.mu.sampled = now
	pcolls := s.pcollCountsLocked()
	for _, st := range s.mu.stages {
		if w, ok := wm[st.ID]; ok {
			st.Watermark = w
		}
		in, out := st.ElementsIn, st.ElementsOut
		if st.Kind != "sdk" {
			in, out = sumOf(pcolls, st.Inputs), sumOf(pcolls, st.Outputs)
		}
		n := out
		if len(st.Outputs) == 0 {
			n = in
		}
		if !first && dt > 0 {
			st.Rate = append(st.Rate, float64(n-st.lastCount)/dt)
			if len(st.Rate) > RateSamples {
				st.Rate = st.Rate[len(st.Rate)-RateSamples:]
			}
		}
		st.lastCount = n
	}
}

// StatsSnapshot is a copy of a job's statistics at one moment.
type StatsSnapshot struct {
	Stages       []StageStats     `json:"stages"`
	PCollections map[string]int64 `json:"pcollections"`
	Workers      int              `json:"workers"`
	// RatesAt is when the stages' Rates were measured, Unix ms (0: never).
	RatesAt int64 `json:"rates_at,omitempty"`
	// DesiredWorkers is, per environment, the workers the autoscaler
	// last decided on; nil when the job does not scale.
	DesiredWorkers map[string]int `json:"desired_workers,omitempty"`
	// Scaling is the autoscaler's changes, oldest first.
	Scaling []ScalingEvent `json:"scaling,omitempty"`
	// Checkpoints are the last checkpoints and savepoints, oldest first;
	// Savepoints the last savepoints alone; Exceptions the failed
	// bundles, grouped by cause and place, in order first seen.
	Checkpoints []CheckpointEvent `json:"checkpoints,omitempty"`
	Savepoints  []CheckpointEvent `json:"savepoints,omitempty"`
	Exceptions  []ExceptionGroup  `json:"exceptions,omitempty"`
}

// Snapshot copies the statistics. A PCollection's count is the largest any
// stage reported (producer and consumers agree once their bundles are
// committed); runner stages (GBK, flatten) run no SDK bundles (but for
// a combiner tree's merges, counted as their GroupByKey's bundles with no
// PCollection counts), so their counts are those of the PCollections they
// read and write.
func (s *Stats) Snapshot() StatsSnapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := StatsSnapshot{Stages: make([]StageStats, len(s.mu.stages)), PCollections: s.pcollCountsLocked(), Workers: s.mu.workers,
		RatesAt: s.mu.ratesAt, DesiredWorkers: maps.Clone(s.mu.desired), Scaling: slices.Clone(s.mu.scaling)}
	s.snapshotHistoryLocked(&out)
	for i, st := range s.mu.stages {
		c := *st
		c.Rate = slices.Clone(st.Rate)
		c.Latency.Counts = slices.Clone(st.Latency.Counts)
		if c.Kind != "sdk" {
			c.ElementsIn, c.ElementsOut = sumOf(out.PCollections, c.Inputs), sumOf(out.PCollections, c.Outputs)
		}
		out.Stages[i] = c
	}
	return out
}

// pcollCountsLocked is each PCollection's count: the most any stage reported.
func (s *Stats) pcollCountsLocked() map[string]int64 {
	out := map[string]int64{}
	for _, rep := range s.mu.reports {
		for pc, n := range rep {
			out[pc] = max(out[pc], n)
		}
	}
	return out
}

func sumOf(counts map[string]int64, pcs []string) int64 {
	n := int64(0)
	for _, pc := range pcs {
		n += counts[pc]
	}
	return n
}
