package web

import (
	"maps"
	"slices"
	"sort"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/beam-runner/beam-runner/runner/jobs"
	"github.com/prometheus/client_golang/prometheus"
)

// maxFinishedJobs bounds the finished jobs whose per-stage series are
// exported (the most recent ones), so label cardinality stays bounded on
// a long-lived server. Running jobs are always exported.
const maxFinishedJobs = 20

// Labels are jobs, stages and PCollections: bounded by the pipelines run,
// never per element or key.
var (
	descJobs        = prometheus.NewDesc("beam_runner_jobs", "Jobs known to the server, by state.", []string{"state"}, nil)
	descWorkers     = prometheus.NewDesc("beam_runner_job_workers", "SDK workers of a job.", []string{"job"}, nil)
	descStarted     = prometheus.NewDesc("beam_runner_bundles_started_total", "Bundles handed to SDK workers.", []string{"job", "stage"}, nil)
	descFailed      = prometheus.NewDesc("beam_runner_bundles_failed_total", "Bundles that failed.", []string{"job", "stage"}, nil)
	descRetried     = prometheus.NewDesc("beam_runner_bundles_retried_total", "Failed bundles run again.", []string{"job", "stage"}, nil)
	descRunning     = prometheus.NewDesc("beam_runner_bundles_running", "Bundles running now.", []string{"job", "stage"}, nil)
	descLatency     = prometheus.NewDesc("beam_runner_bundle_duration_seconds", "Time from handing a bundle to a worker to its completion.", []string{"job", "stage"}, nil)
	descSplits      = prometheus.NewDesc("beam_runner_dynamic_splits_total", "Dynamic splits of running bundles that gave work back.", []string{"job", "stage"}, nil)
	descElements    = prometheus.NewDesc("beam_runner_elements_total", "Elements a stage read (in) and wrote (out).", []string{"job", "stage", "direction"}, nil)
	descBytes       = prometheus.NewDesc("beam_runner_bytes_total", "Encoded bytes a stage read (in) and wrote (out).", []string{"job", "stage", "direction"}, nil)
	descPColl       = prometheus.NewDesc("beam_runner_pcollection_elements_total", "Elements in a PCollection.", []string{"job", "pcollection"}, nil)
	descWatermarkLg = prometheus.NewDesc("beam_runner_watermark_lag_seconds", "How far a stage's output watermark is behind wall time (only while it has one and is not complete).", []string{"job", "stage"}, nil)
	descBusy        = prometheus.NewDesc("beam_runner_stage_busy_ms_per_second", "Milliseconds per second a stage's bundle slot spends busy (SDK execution time, else bundle wall time), over the rate window.", []string{"job", "stage"}, nil)
	descIdle        = prometheus.NewDesc("beam_runner_stage_idle_ms_per_second", "Milliseconds per second a stage's bundle slot is idle (1000 minus busy and back-pressured), over the rate window.", []string{"job", "stage"}, nil)
	descBackPress   = prometheus.NewDesc("beam_runner_stage_backpressured_ms_per_second", "Milliseconds per second a stage's bundle slot is held by flow control; exported only once measured.", []string{"job", "stage"}, nil)
	descProcRate    = prometheus.NewDesc("beam_runner_stage_processing_rate", "A stage's true processing rate (DS2): input elements per second of busy time.", []string{"job", "stage"}, nil)
	descObserved    = prometheus.NewDesc("beam_runner_stage_observed_rate", "Elements per second of wall time a stage read (in) and wrote (out), over the rate window.", []string{"job", "stage", "direction"}, nil)
	descBacklog     = prometheus.NewDesc("beam_runner_stage_backlog_elements", "A source stage's remaining work, as its splittable DoFns report it (in the SDK's work units).", []string{"job", "stage"}, nil)
	descDesired     = prometheus.NewDesc(DesiredWorkersMetric, "SDK workers the autoscaler (--autoscaling=ds2) last decided an environment of a running job needs; the HorizontalPodAutoscaler of deploy/k8s scales the worker pool on it. Only while the job runs.", []string{"job", "environment"}, nil)
	descStoreBytes  = prometheus.NewDesc("beam_runner_store_bytes", "Bytes on disk of the --state_dir store, by part: jobs (job records and checkpoints) and scratch (running jobs' spill).", []string{"part"}, nil)
)

// DesiredWorkersMetric is the autoscaler's decision as a gauge, which
// deploy/k8s's HorizontalPodAutoscaler names.
const DesiredWorkersMetric = "beam_runner_desired_workers"

// collector reads the service at scrape time, so nothing is double-booked
// and finished jobs age out of the export on their own.
type collector struct{ svc *jobs.Service }

func newCollector(svc *jobs.Service) *collector { return &collector{svc: svc} }

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descJobs, descWorkers, descStarted, descFailed, descRetried, descRunning,
		descLatency, descSplits, descElements, descBytes, descPColl, descWatermarkLg, descStoreBytes,
		descBusy, descIdle, descBackPress, descProcRate, descObserved, descBacklog, descDesired} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	sums := c.svc.Summaries()
	byState := map[string]int{}
	for _, s := range jobpb.JobState_Enum_name {
		byState[s] = 0
	}
	for _, s := range sums {
		byState[s.State]++
	}
	for st, n := range byState {
		ch <- prometheus.MustNewConstMetric(descJobs, prometheus.GaugeValue, float64(n), st)
	}
	c.collectStore(ch)
	now := time.Now()
	for _, s := range exported(sums) {
		d, err := c.svc.Detail(s.ID)
		if err != nil {
			continue // removed since the listing
		}
		collectJob(ch, d, now)
		if s.End.IsZero() { // a decision holds only while its job runs
			collectDesired(ch, d)
		}
	}
}

// collectStore exports the store's size, if the service has a store; a
// size that cannot be read is an invalid metric, which the scrape reports.
func (c *collector) collectStore(ch chan<- prometheus.Metric) {
	u, ok, err := c.svc.StoreUsage()
	switch {
	case !ok:
	case err != nil:
		ch <- prometheus.NewInvalidMetric(descStoreBytes, err)
	default:
		ch <- prometheus.MustNewConstMetric(descStoreBytes, prometheus.GaugeValue, float64(u.Jobs), "jobs")
		ch <- prometheus.MustNewConstMetric(descStoreBytes, prometheus.GaugeValue, float64(u.Scratch), "scratch")
	}
}

// exported picks the jobs with per-stage series: every live job and the
// most recently ended ones.
func exported(sums []jobs.Summary) []jobs.Summary {
	var live, ended []jobs.Summary
	for _, s := range sums {
		if s.End.IsZero() {
			live = append(live, s)
		} else {
			ended = append(ended, s)
		}
	}
	sort.Slice(ended, func(i, j int) bool { return ended[i].End.After(ended[j].End) })
	return append(live, ended[:min(len(ended), maxFinishedJobs)]...)
}

func collectJob(ch chan<- prometheus.Metric, d jobs.Detail, now time.Time) {
	job := d.ID
	gauge := func(desc *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, labels...)
	}
	counter := func(desc *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, float64(v), labels...)
	}
	gauge(descWorkers, float64(d.Stats.Workers), job)
	for _, st := range d.Stats.Stages {
		counter(descStarted, st.BundlesRunning+st.BundlesDone+st.BundlesFailed, job, st.ID)
		counter(descFailed, st.BundlesFailed, job, st.ID)
		counter(descRetried, st.BundlesRetried, job, st.ID)
		gauge(descRunning, float64(st.BundlesRunning), job, st.ID)
		counter(descSplits, st.Splits, job, st.ID)
		counter(descElements, st.ElementsIn, job, st.ID, "in")
		counter(descElements, st.ElementsOut, job, st.ID, "out")
		counter(descBytes, st.BytesIn, job, st.ID, "in")
		counter(descBytes, st.BytesOut, job, st.ID, "out")
		ch <- latencyHistogram(st.Latency, job, st.ID)
		if lag, ok := watermarkLag(st.Watermark, now); ok {
			gauge(descWatermarkLg, lag, job, st.ID)
		}
		if st.Rates != nil {
			collectRates(gauge, *st.Rates, job, st.ID)
		}
	}
	for _, pc := range slices.Sorted(maps.Keys(d.Stats.PCollections)) {
		counter(descPColl, d.Stats.PCollections[pc], job, pc)
	}
}

// collectDesired exports each environment's desired workers.
func collectDesired(ch chan<- prometheus.Metric, d jobs.Detail) {
	for _, env := range slices.Sorted(maps.Keys(d.Stats.DesiredWorkers)) {
		ch <- prometheus.MustNewConstMetric(descDesired, prometheus.GaugeValue, float64(d.Stats.DesiredWorkers[env]), d.ID, env)
	}
}

// collectRates exports a stage's measured rates; figures not measured
// (back-pressure before flow control, backlog of a non-source, λp without
// busy time) are left out rather than exported as zero.
func collectRates(gauge func(*prometheus.Desc, float64, ...string), r jobs.StageRates, job, stage string) {
	gauge(descBusy, r.BusyMsPerSec, job, stage)
	gauge(descIdle, r.IdleMsPerSec, job, stage)
	if r.BackPressuredMsPerSec != nil {
		gauge(descBackPress, *r.BackPressuredMsPerSec, job, stage)
	}
	if r.BusyMsPerSec > 0 { // else λp is undefined, not 0
		gauge(descProcRate, r.ProcessingRate, job, stage)
	}
	gauge(descObserved, r.ObservedIn, job, stage, "in")
	gauge(descObserved, r.ObservedOut, job, stage, "out")
	if r.Backlog != nil {
		gauge(descBacklog, *r.Backlog, job, stage)
	}
}

func latencyHistogram(h jobs.Histogram, labels ...string) prometheus.Metric {
	buckets := make(map[float64]uint64, len(jobs.LatencyBuckets))
	cum := uint64(0)
	for i, le := range jobs.LatencyBuckets {
		if i < len(h.Counts) {
			cum += h.Counts[i]
		}
		buckets[le] = cum
	}
	return prometheus.MustNewConstHistogram(descLatency, h.Count, h.Sum, buckets, labels...)
}

// Beam's timestamps run from about -2.9e5 to +2.9e5 years; a watermark
// beyond these bounds is "none yet" or "complete".
const (
	minWatermark = -9e15 // ms
	maxWatermark = 9e15
)

// watermarkLag is how far wm (Unix ms) is behind now, if it is a real time.
func watermarkLag(wm int64, now time.Time) (float64, bool) {
	if wm <= minWatermark || wm >= maxWatermark {
		return 0, false
	}
	return max(float64(now.UnixMilli()-wm)/1000, 0), true
}
