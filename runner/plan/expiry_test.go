package plan

import (
	"strings"
	"testing"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"
)

func parDoWith(t *testing.T, pl *pipepb.ParDoPayload) *pipepb.PTransform {
	t.Helper()
	b, err := proto.Marshal(pl)
	if err != nil {
		t.Fatal(err)
	}
	return &pipepb.PTransform{UniqueName: "p", Spec: &pipepb.FunctionSpec{Urn: URNParDo, Payload: b}}
}

// The OnWindowExpiration family must be one of the ParDo's event-time
// timer families: the runner sets its timers with that family's coder.
func TestCheckParDoOnWindowExpiration(t *testing.T) {
	fams := map[string]*pipepb.TimerFamilySpec{
		"ev": {TimeDomain: pipepb.TimeDomain_EVENT_TIME},
		"pt": {TimeDomain: pipepb.TimeDomain_PROCESSING_TIME},
	}
	for fam, want := range map[string]string{"ev": "", "pt": "event-time", "missing": "not among its timer families"} {
		err := checkParDo("p", parDoWith(t, &pipepb.ParDoPayload{TimerFamilySpecs: fams, OnWindowExpirationTimerFamilySpec: fam}))
		if (want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("family %q: error %v, want one saying %q", fam, err, want)
		}
	}
}
