package web_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/coder"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/beam-runner/beam-runner/runner/jobs"
	"github.com/beam-runner/beam-runner/testsupport/jobtest"
	"github.com/beam-runner/beam-runner/testsupport/testkit"
	"github.com/beam-runner/beam-runner/testsupport/testwait"
	dto "github.com/prometheus/client_model/go"
)

func init() { register.Function1x1(slowSquare) }

// slowSquare takes 5 ms an element, so that its bundles run longer than
// Go's harness samples execution time (every 200 ms).
func slowSquare(n int) int {
	time.Sleep(5 * time.Millisecond)
	return n * n
}

// TestStageRatesFromSDKExecutionTime runs a Go pipeline whose second
// stage spends 5 ms on each of its 400 elements and requires its busy
// time to come from the SDK's execution-time metrics, with a true
// processing rate that counts that time: under 1000 elements per busy
// second, as no element takes under 1 ms of busy time.
func TestStageRatesFromSDKExecutionTime(t *testing.T) {
	env := jobtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	nums := make([]int, 400)
	for i := range nums {
		nums[i] = i
	}
	id, _, err := env.Submit(ctx, "sdk-busy", func(s beam.Scope) {
		beam.ParDo(s.Scope("slow"), slowSquare, beam.Reshuffle(s, beam.CreateList(s, nums)))
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := env.AwaitState(ctx, id, jobpb.JobState_DONE, time.Minute); err != nil {
		t.Fatal(err)
	}
	var detail jobs.Detail
	getJSON(t, env.WebURL+"/api/jobs/"+id, &detail)
	for _, st := range detail.Stats.Stages {
		if st.Kind != "sdk" || !strings.Contains(strings.Join(st.Transforms, " "), "slowSquare") {
			continue
		}
		r := st.Rates
		if r == nil {
			t.Fatalf("stage %s (%s) has no rates", st.ID, st.Name)
		}
		t.Logf("stage %s (%s): busy %.1f ms/s from %s over %d slots, λp %.1f/s", st.ID, st.Name, r.BusyMsPerSec, r.BusySource, r.Slots, r.ProcessingRate)
		if r.BusySource != "sdk" || r.ProcessingRate <= 0 || r.ProcessingRate >= 1000 {
			t.Errorf("stage %s: busy time from %q, λp %v/s; want the SDK's, and λp in (0, 1000)", st.ID, r.BusySource, r.ProcessingRate)
		}
		return
	}
	t.Fatalf("no SDK stage runs slowSquare: %+v", detail.Stats.Stages)
}

// TestStageRatesExported runs a real Go pipeline (LOOPBACK) to DONE and
// requires every SDK stage that read elements to have measured rates, a
// busy time per second and a true processing rate above zero, in the job
// detail the UI reads, in /metrics (labelled by job and stage) and in the
// Job API's metrics; back-pressure, not measured before flow control,
// must be absent rather than zero.
func TestStageRatesExported(t *testing.T) {
	env := jobtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	id, _, err := env.Submit(ctx, "rates", jobtest.Batch(5000))
	if err != nil {
		t.Fatal(err)
	}
	if err := env.AwaitState(ctx, id, jobpb.JobState_DONE, time.Minute); err != nil {
		t.Fatal(err)
	}
	var detail jobs.Detail
	getJSON(t, env.WebURL+"/api/jobs/"+id, &detail)
	measured := map[string]bool{}
	for _, st := range detail.Stats.Stages {
		if st.Kind != "sdk" || st.ElementsIn == 0 {
			continue
		}
		r := st.Rates
		switch {
		case r == nil:
			t.Errorf("stage %s (%s) read %d elements but has no rates", st.ID, st.Name, st.ElementsIn)
			continue
		case r.BusyMsPerSec <= 0 || r.BusyMsPerSec > 1000 || r.ProcessingRate <= 0:
			t.Errorf("stage %s (%s): busy %v ms/s, λp %v/s; want busy in (0, 1000] and λp > 0", st.ID, st.Name, r.BusyMsPerSec, r.ProcessingRate)
		case r.IdleMsPerSec < 0 || r.BusyMsPerSec+r.IdleMsPerSec > 1000.001:
			t.Errorf("stage %s: busy %v + idle %v ms/s exceed a second", st.ID, r.BusyMsPerSec, r.IdleMsPerSec)
		case r.BackPressuredMsPerSec != nil:
			t.Errorf("stage %s: back-pressure %v ms/s reported, but nothing measures it yet", st.ID, *r.BackPressuredMsPerSec)
		}
		measured[st.ID] = true
		t.Logf("stage %s (%s): busy %.1f idle %.1f ms/s (%s, %d slots), λp %.0f/s, in %.0f/s out %.0f/s over %d ms",
			st.ID, st.Name, r.BusyMsPerSec, r.IdleMsPerSec, r.BusySource, r.Slots, r.ProcessingRate, r.ObservedIn, r.ObservedOut, r.WindowMs)
	}
	if len(measured) < 2 {
		t.Fatalf("%d SDK stages measured; want the stages before and after the GroupByKey", len(measured))
	}
	checkRateSeries(t, scrape(t, env.WebURL+"/metrics"), id, measured)
	checkRateInfos(ctx, t, env, id, measured)
}

// checkRateSeries requires /metrics to export busy, idle, processing-rate
// and observed-rate gauges for each measured stage, and no back-pressure.
func checkRateSeries(t *testing.T, fams map[string]*dto.MetricFamily, job string, stages map[string]bool) {
	t.Helper()
	for _, name := range []string{"beam_runner_stage_busy_ms_per_second", "beam_runner_stage_idle_ms_per_second",
		"beam_runner_stage_processing_rate", "beam_runner_stage_observed_rate"} {
		got := map[string]float64{}
		for _, m := range fams[name].GetMetric() {
			if l := labels(m); l["job"] == job && (l["direction"] == "" || l["direction"] == "in") {
				got[l["stage"]] = m.GetGauge().GetValue()
			}
		}
		for st := range stages {
			v, ok := got[st]
			if !ok {
				t.Errorf("/metrics lacks %s{job=%q,stage=%q}", name, job, st)
			}
			if name != "beam_runner_stage_idle_ms_per_second" && v <= 0 {
				t.Errorf("%s{stage=%q} = %v, want > 0", name, st, v)
			}
		}
	}
	if f := fams["beam_runner_stage_backpressured_ms_per_second"]; f != nil {
		t.Errorf("/metrics exports back-pressure (%d series) though nothing measures it yet", len(f.GetMetric()))
	}
}

// checkRateInfos requires the Job API's metrics to carry each measured
// stage's busy time per second and processing rate as runner gauges.
func checkRateInfos(ctx context.Context, t *testing.T, env *jobtest.Env, id string, stages map[string]bool) {
	t.Helper()
	resp, err := env.Client.GetJobMetrics(ctx, &jobpb.GetJobMetricsRequest{JobId: id})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]float64{jobs.UrnStageBusy: {}, jobs.UrnStageProcRate: {}}
	for _, mi := range resp.GetMetrics().GetCommitted() {
		byStage, ok := got[mi.GetUrn()]
		if !ok {
			continue
		}
		r := bytes.NewReader(mi.GetPayload())
		if _, err := coder.DecodeVarInt(r); err != nil { // latest_double: timestamp, then value
			t.Fatalf("%s: %v", mi.GetUrn(), err)
		}
		v, err := coder.DecodeDouble(r)
		if err != nil {
			t.Fatalf("%s: %v", mi.GetUrn(), err)
		}
		byStage[mi.GetLabels()["STAGE"]] = v
	}
	for urn, byStage := range got {
		for st := range stages {
			if byStage[st] <= 0 {
				t.Errorf("Job API metric %s for stage %s = %v, want > 0", urn, st, byStage[st])
			}
		}
	}
}

// TestStageBacklogFromPythonSDF runs testdata/sdf_backlog.py, a Python
// splittable DoFn reading 1,500 offsets at 5 ms each, on LOOPBACK
// workers, and requires the job detail the UI reads to show its stage's
// backlog (the remaining work its progress reports) above zero while it
// runs, and the job to end DONE.
func TestStageBacklogFromPythonSDF(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Python SDK workers")
	}
	env := jobtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	type result struct {
		out []byte
		err error
	}
	done := make(chan result, 1)
	cmd := testkit.PythonClient(ctx, t, "", "testdata/sdf_backlog.py", "--job_endpoint="+env.Endpoint)
	go func() {
		out, err := cmd.CombinedOutput()
		done <- result{out, err}
	}()
	var seen string
	err := testwait.For(ctx, 2*time.Minute, func() (bool, error) {
		select {
		case r := <-done:
			done <- r
			return false, fmt.Errorf("the pipeline ended (%v) before a backlog showed:\n%s", r.err, r.out)
		default:
		}
		seen = backlogShown(ctx, t, env)
		return seen != "", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(seen)
	if r := <-done; r.err != nil {
		t.Fatalf("sdf_backlog.py: %v\n%s", r.err, r.out)
	}
}

// backlogShown describes the first stage of a running job whose backlog
// is above zero, "" if none.
func backlogShown(ctx context.Context, t *testing.T, env *jobtest.Env) string {
	resp, err := env.Client.GetJobs(ctx, &jobpb.GetJobsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range resp.GetJobInfo() {
		var d jobs.Detail
		getJSON(t, env.WebURL+"/api/jobs/"+j.GetJobId(), &d)
		for _, st := range d.Stats.Stages {
			if r := st.Rates; r != nil && r.Backlog != nil && *r.Backlog > 0 && d.State == "RUNNING" {
				return fmt.Sprintf("stage %s (%s): backlog %v, busy %.0f ms/s from %s", st.ID, st.Name, *r.Backlog, r.BusyMsPerSec, r.BusySource)
			}
		}
	}
	return ""
}
