package execute

import (
	"testing"
	"time"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	"github.com/beam-runner/beam-runner/harness"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// A residual holds at the least of its outputs' watermark estimates, the
// epoch included (it once read as "no estimate"); without estimates the
// engine holds at the element's timestamp.
func TestResidualsHoldAtLeastEstimate(t *testing.T) {
	app := func(wms ...time.Time) *fnpb.DelayedBundleApplication {
		a := &fnpb.BundleApplication{Element: []byte("e"), OutputWatermarks: map[string]*timestamppb.Timestamp{}}
		for i, wm := range wms {
			a.OutputWatermarks[string(rune('a'+i))] = timestamppb.New(wm)
		}
		return &fnpb.DelayedBundleApplication{Application: a, RequestedTimeDelay: durationpb.New(0)}
	}
	epoch, later := time.UnixMilli(0), time.UnixMilli(5000)
	rs := residuals(harness.Result{Residuals: []*fnpb.DelayedBundleApplication{app(later, epoch, later, later), app(epoch), app(later), app()}})
	want := []struct {
		held bool
		hold int64
	}{{true, 0}, {true, 0}, {true, 5000}, {false, 0}}
	for i, w := range want {
		if rs[i].Held != w.held || rs[i].Hold != w.hold {
			t.Errorf("residual %d: held %v at %d, want held %v at %d", i, rs[i].Held, rs[i].Hold, w.held, w.hold)
		}
	}
}
