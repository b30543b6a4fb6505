package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/coder"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/beam-runner/beam-runner/runner/jobs"
	"github.com/beam-runner/beam-runner/runner/metrics"
	"github.com/beam-runner/beam-runner/testsupport/jobtest"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"bytes"
)

// TestMetricsMatchJobAPI runs a batch job to DONE, then requires /metrics
// to parse with Prometheus' text parser and its element counts (per
// PCollection, and per stage in and out) to equal the element_count
// metrics GetJobMetrics returns for the same job.
func TestMetricsMatchJobAPI(t *testing.T) {
	env := jobtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	id, _, err := env.Submit(ctx, "metrics", jobtest.Batch(5000))
	if err != nil {
		t.Fatal(err)
	}
	if err := env.AwaitState(ctx, id, jobpb.JobState_DONE, time.Minute); err != nil {
		t.Fatal(err)
	}
	api := jobAPICounts(ctx, t, env, id)
	fams := scrape(t, env.WebURL+"/metrics")

	pcolls := series(fams["beam_runner_pcollection_elements_total"], id, "pcollection")
	if len(pcolls) == 0 {
		t.Fatalf("no PCollection series for job %s in /metrics", id)
	}
	for pc, n := range api {
		if pcolls[pc] != float64(n) {
			t.Errorf("PCollection %s: /metrics says %v elements, the Job API %d", pc, pcolls[pc], n)
		}
	}
	var detail jobs.Detail
	getJSON(t, env.WebURL+"/api/jobs/"+id, &detail)
	in := map[string]float64{}
	out := map[string]float64{}
	for _, m := range fams["beam_runner_elements_total"].GetMetric() {
		l := labels(m)
		if l["job"] != id {
			continue
		}
		if l["direction"] == "in" {
			in[l["stage"]] = m.GetCounter().GetValue()
		} else {
			out[l["stage"]] = m.GetCounter().GetValue()
		}
	}
	checked := 0
	for _, st := range detail.Stats.Stages {
		if st.Kind != "sdk" {
			continue
		}
		wantIn, wantOut := api[st.Inputs[0]], int64(0)
		for _, pc := range st.Outputs {
			wantOut += api[pc]
		}
		if in[st.ID] != float64(wantIn) || out[st.ID] != float64(wantOut) {
			t.Errorf("stage %s (%s): /metrics in %v out %v; Job API in %d out %d", st.ID, st.Name, in[st.ID], out[st.ID], wantIn, wantOut)
		}
		if wantIn == 0 && wantOut == 0 {
			t.Errorf("stage %s (%s) counted no elements", st.ID, st.Name)
		}
		checked++
		t.Logf("stage %s (%s): in %v out %v", st.ID, st.Name, in[st.ID], out[st.ID])
	}
	if checked < 2 {
		t.Errorf("only %d SDK stages checked; want the stages before and after the GroupByKey", checked)
	}
	if api[detail.Stats.Stages[len(detail.Stats.Stages)-1].Inputs[0]] == 0 {
		t.Errorf("no elements reached the last stage")
	}
	for _, name := range []string{"beam_runner_jobs", "beam_runner_bundle_duration_seconds", "beam_runner_bundles_started_total", "go_goroutines", "process_resident_memory_bytes"} {
		if fams[name] == nil {
			t.Errorf("/metrics lacks %s", name)
		}
	}
}

// jobAPICounts reads element_count per PCollection from GetJobMetrics.
func jobAPICounts(ctx context.Context, t *testing.T, env *jobtest.Env, id string) map[string]int64 {
	resp, err := env.Client.GetJobMetrics(ctx, &jobpb.GetJobMetricsRequest{JobId: id})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, mi := range resp.GetMetrics().GetCommitted() {
		if mi.GetUrn() != metrics.UrnElementCount {
			continue
		}
		n, err := coder.DecodeVarInt(bytes.NewReader(mi.GetPayload()))
		if err != nil {
			t.Fatal(err)
		}
		out[mi.GetLabels()["PCOLLECTION"]] += n
	}
	if len(out) == 0 {
		t.Fatal("the Job API returned no element counts")
	}
	return out
}

func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing %s: %v", url, err)
	}
	return fams
}

func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// series maps a label's values to counter values, for one job's series.
func series(f *dto.MetricFamily, job, label string) map[string]float64 {
	out := map[string]float64{}
	for _, m := range f.GetMetric() {
		if l := labels(m); l["job"] == job {
			out[l[label]] = m.GetCounter().GetValue()
		}
	}
	return out
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}
