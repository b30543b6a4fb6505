package jobs

import (
	"strings"
	"testing"
	"time"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/types/known/structpb"
)

// A job's autoscaling options override the server's, in either of the
// names SDKs send, with durations as text or seconds; bad ones fail
// naming the option.
func TestJobScaling(t *testing.T) {
	server := DefaultScaling()
	for _, c := range []struct {
		opts map[string]any
		want Scaling
		err  string
	}{
		{opts: nil, want: server},
		{opts: map[string]any{"beam:option:autoscaling:v1": "DS2", "min_workers": "2", "beam:option:max_workers:v1": 5.0,
			"autoscaling_interval": "3s", "scale_down_interval": 90.0, "batch_target_time": "30s",
			"scale_down_window": "0s"},
			want: Scaling{Mode: ScalingDS2, MinWorkers: 2, MaxWorkers: 5, Interval: 3 * time.Second, ScaleDownInterval: 90 * time.Second,
				BatchTarget: 30 * time.Second}},
		{opts: map[string]any{"scale_down_window": "-1m"}, err: "scale_down_window: want a duration of 0 or more"},
		{opts: map[string]any{"batch_target_time": "-1s"}, err: "batch_target_time: want a duration of 0 or more"},
		{opts: map[string]any{"autoscaling": "dhalion"}, err: "autoscaling: want none or ds2"},
		{opts: map[string]any{"min_workers": "4", "max_workers": "2"}, err: "max_workers 2 is below min_workers 4"},
		{opts: map[string]any{"max_workers": 2.5}, err: "max_workers: want a whole number"},
		{opts: map[string]any{"autoscaling_interval": "soon"}, err: "autoscaling_interval: want a duration"},
		{opts: map[string]any{"autoscaling_interval": "0s"}, err: "autoscaling_interval: want a positive duration"},
	} {
		opts, err := structpb.NewStruct(c.opts)
		if err != nil {
			t.Fatal(err)
		}
		got, err := JobScaling(opts, server)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%v: error %v, want one with %q", c.opts, err, c.err)
		case c.err == "" && err != nil:
			t.Errorf("%v: %v", c.opts, err)
		case c.err == "" && got != c.want:
			t.Errorf("%v: got %+v, want %+v", c.opts, got, c.want)
		}
	}
}

// Without autoscaling an environment's count is fixed; with it the job
// starts at the least unless --workers_per_environment says otherwise,
// and that option (else the machine's cores) is the default most.
func TestEnvWorkers(t *testing.T) {
	env := &pipepb.Environment{Urn: "beam:env:process:v1"}
	ds2 := Scaling{Mode: ScalingDS2, Interval: time.Second}
	for _, c := range []struct {
		opts          map[string]any
		s             Scaling
		start, lo, hi int
	}{
		{map[string]any{WorkersOption: "3"}, DefaultScaling(), 3, 3, 3},
		{map[string]any{WorkersOption: "4"}, ds2, 4, 1, 4},
		{map[string]any{WorkersOption: "8"}, Scaling{Mode: ScalingDS2, MinWorkers: 2, MaxWorkers: 5}, 5, 2, 5},
		{map[string]any{}, Scaling{Mode: ScalingDS2, MinWorkers: 2, MaxWorkers: 3}, 2, 2, 3},
	} {
		opts, err := structpb.NewStruct(c.opts)
		if err != nil {
			t.Fatal(err)
		}
		start, lo, hi, err := EnvWorkers(opts, env, c.s)
		if err != nil || start != c.start || lo != c.lo || hi != c.hi {
			t.Errorf("%v %+v: start %d in [%d, %d] (%v), want %d in [%d, %d]", c.opts, c.s, start, lo, hi, err, c.start, c.lo, c.hi)
		}
	}
}
