package jobs

import (
	"bytes"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/coder"
)

// Published rates reach the snapshot and the Job API's metrics as runner
// gauges by stage; a figure not measured (back-pressure here) is left out,
// and a stage not in the plan is ignored.
func TestRatesInSnapshotAndMetrics(t *testing.T) {
	s := NewStats()
	s.SetStages([]StageInfo{{ID: "s1", Kind: "sdk"}, {ID: "s2", Kind: "gbk"}})
	backlog := 42.0
	s.SetRates(1234, map[string]StageRates{
		"s1":    {BusyMsPerSec: 250, IdleMsPerSec: 750, ProcessingRate: 80, Backlog: &backlog},
		"ghost": {BusyMsPerSec: 1},
	})
	snap := s.Snapshot()
	if snap.RatesAt != 1234 || snap.Stages[0].Rates == nil || snap.Stages[0].Rates.BusyMsPerSec != 250 || snap.Stages[1].Rates != nil {
		t.Fatalf("snapshot rates at %d: %+v, %+v", snap.RatesAt, snap.Stages[0].Rates, snap.Stages[1].Rates)
	}
	got := map[string]float64{}
	for _, mi := range rateInfos(snap) {
		if mi.GetLabels()["STAGE"] != "s1" || mi.GetType() != "beam:metrics:latest_double:v1" {
			t.Errorf("info %v: want a latest_double gauge of stage s1", mi)
		}
		r := bytes.NewReader(mi.GetPayload())
		ts, err := coder.DecodeVarInt(r)
		if err != nil || ts != 1234 {
			t.Errorf("%s: timestamp %d, %v; want 1234", mi.GetUrn(), ts, err)
		}
		if got[mi.GetUrn()], err = coder.DecodeDouble(r); err != nil {
			t.Errorf("%s: %v", mi.GetUrn(), err)
		}
	}
	want := map[string]float64{UrnStageBusy: 250, UrnStageIdle: 750, UrnStageProcRate: 80, UrnStageOutputRate: 0,
		UrnStageObservedIn: 0, UrnStageBacklog: 42}
	if len(got) != len(want) {
		t.Errorf("gauges %v; want %v (no back-pressure)", got, want)
	}
	for urn, v := range want {
		if g, ok := got[urn]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", urn, g, ok, v)
		}
	}
}
