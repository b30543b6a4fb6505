package web

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/beam-runner/beam-runner/runner/jobs"
	"github.com/beam-runner/beam-runner/runner/store"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestStoreSize: with a store, /metrics has its size by part and the job
// list carries it for the UI, equal to what the store measures; a job
// spilling shows in the scratch part. Without a store neither appears.
func TestStoreSize(t *testing.T) {
	st, err := store.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sc := st.Scratch("spilling")
	defer sc.Remove()
	if err := sc.Space("p/").WriteRun([][]byte{[]byte("k")}, [][]byte{make([]byte, 1<<10)}); err != nil {
		t.Fatal(err)
	}
	svc := jobs.NewService(jobs.Options{Store: st})
	defer svc.Close(t.Context())
	h := Handler(svc, Options{})
	want, err := st.Usage()
	if err != nil {
		t.Fatal(err)
	}
	if want.Jobs == 0 || want.Scratch == 0 {
		t.Fatalf("store usage %+v: want both parts on disk", want)
	}

	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(get(t, h, "GET", "/metrics").Body.String()))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, m := range fams["beam_runner_store_bytes"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "part" {
				got[l.GetValue()] = m.GetGauge().GetValue()
			}
		}
	}
	if got["jobs"] != float64(want.Jobs) || got["scratch"] != float64(want.Scratch) {
		t.Errorf("/metrics store bytes %v, want jobs %d scratch %d", got, want.Jobs, want.Scratch)
	}

	var list struct{ Store *store.Usage }
	if err := json.Unmarshal(get(t, h, "GET", "/api/jobs").Body.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	if list.Store == nil || *list.Store != want {
		t.Errorf("/api/jobs store = %+v, want %+v", list.Store, want)
	}

	none := jobs.NewService(jobs.Options{})
	defer none.Close(t.Context())
	hn := Handler(none, Options{})
	if body := get(t, hn, "GET", "/metrics").Body.String(); strings.Contains(body, "beam_runner_store_bytes") {
		t.Errorf("/metrics without a store has beam_runner_store_bytes")
	}
	if body := get(t, hn, "GET", "/api/jobs").Body.String(); strings.Contains(body, `"store"`) {
		t.Errorf("/api/jobs without a store: %s", clip(body))
	}
}
