package jobs

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/types/known/structpb"
)

// The autoscaling options (docs/scaling.md "Autoscaling"): server flags
// of the same names give the defaults, a job's options override them.
const (
	AutoscalingOption         = "autoscaling"
	MinWorkersOption          = "min_workers"
	MaxWorkersOption          = "max_workers"
	AutoscalingIntervalOption = "autoscaling_interval"
	ScaleDownIntervalOption   = "scale_down_interval"
	ScaleDownWindowOption     = "scale_down_window"
	BatchTargetOption         = "batch_target_time"
)

// Autoscaling modes.
const (
	ScalingNone = "none"
	ScalingDS2  = "ds2"
)

// Scaling is how a job's workers are sized while it runs.
type Scaling struct {
	Mode string // ScalingNone or ScalingDS2
	// MinWorkers and MaxWorkers bound each environment's workers; 0
	// means 1 and the environment's --workers_per_environment default
	// (the machine's cores).
	MinWorkers, MaxWorkers int
	// Interval is the time between two policy passes; ScaleDownInterval
	// the least time between a change and a scale-down.
	Interval, ScaleDownInterval time.Duration
	// ScaleDownWindow: a scale-down goes no lower than the highest need
	// of the passes within it (0: this pass's alone).
	ScaleDownWindow time.Duration
	// BatchTarget is the time a batch job's remaining work is sized to
	// finish in.
	BatchTarget time.Duration
}

// DefaultScaling is the server's default: off, DS2's intervals, and the
// batch policy's target time.
func DefaultScaling() Scaling {
	return Scaling{Mode: ScalingNone, Interval: 10 * time.Second, ScaleDownInterval: 5 * time.Minute,
		ScaleDownWindow: time.Minute, BatchTarget: 2 * time.Minute}
}

// On reports whether the job's workers scale.
func (s Scaling) On() bool { return s.Mode == ScalingDS2 }

// Check rejects a mode or bounds the runner cannot honour, naming the
// option.
func (s Scaling) Check() error {
	switch {
	case s.Mode != ScalingNone && s.Mode != ScalingDS2:
		return fmt.Errorf("%s: want %s or %s, got %q", AutoscalingOption, ScalingNone, ScalingDS2, s.Mode)
	case s.MinWorkers < 0 || s.MinWorkers > 256:
		return fmt.Errorf("%s: want a whole number from 1 to 256, got %d", MinWorkersOption, s.MinWorkers)
	case s.MaxWorkers < 0 || s.MaxWorkers > 256:
		return fmt.Errorf("%s: want a whole number from 1 to 256, got %d", MaxWorkersOption, s.MaxWorkers)
	case s.MaxWorkers > 0 && s.MaxWorkers < s.MinWorkers:
		return fmt.Errorf("%s %d is below %s %d", MaxWorkersOption, s.MaxWorkers, MinWorkersOption, s.MinWorkers)
	case s.Interval <= 0:
		return fmt.Errorf("%s: want a positive duration, got %v", AutoscalingIntervalOption, s.Interval)
	case s.ScaleDownInterval < 0:
		return fmt.Errorf("%s: want a duration of 0 or more, got %v", ScaleDownIntervalOption, s.ScaleDownInterval)
	case s.ScaleDownWindow < 0:
		return fmt.Errorf("%s: want a duration of 0 or more, got %v", ScaleDownWindowOption, s.ScaleDownWindow)
	case s.BatchTarget < 0:
		return fmt.Errorf("%s: want a duration of 0 or more, got %v", BatchTargetOption, s.BatchTarget)
	}
	return nil
}

// JobScaling is the server's scaling with the job's options over it.
func JobScaling(opts *structpb.Struct, server Scaling) (Scaling, error) {
	s := server
	if v, ok := Option(opts, AutoscalingOption); ok && v.GetKind() != nil {
		s.Mode = strings.ToLower(strings.TrimSpace(v.GetStringValue()))
	}
	for _, f := range []struct {
		name string
		to   *int
	}{{MinWorkersOption, &s.MinWorkers}, {MaxWorkersOption, &s.MaxWorkers}} {
		if err := intOption(opts, f.name, f.to); err != nil {
			return s, err
		}
	}
	for _, f := range []struct {
		name string
		to   *time.Duration
	}{{AutoscalingIntervalOption, &s.Interval}, {ScaleDownIntervalOption, &s.ScaleDownInterval},
		{ScaleDownWindowOption, &s.ScaleDownWindow}, {BatchTargetOption, &s.BatchTarget}} {
		if err := durationOption(opts, f.name, f.to); err != nil {
			return s, err
		}
	}
	if err := s.Check(); err != nil {
		return s, fmt.Errorf("job option %w", err)
	}
	return s, nil
}

// EnvWorkers is an environment's workers when the job starts and its
// bounds: without autoscaling, --workers_per_environment (PerEnv) and no
// room to move; with it, the bounds default to 1 and PerEnv's figure,
// and the job starts with --workers_per_environment when given (within
// the bounds), else with the least.
func EnvWorkers(opts *structpb.Struct, env *pipepb.Environment, s Scaling) (start, lo, hi int, err error) {
	n, err := PerEnv(opts, env)
	if err != nil || !s.On() {
		return n, n, n, err
	}
	lo, hi = max(s.MinWorkers, 1), n
	if s.MaxWorkers > 0 {
		hi = s.MaxWorkers
	}
	hi = max(hi, lo)
	start = lo
	if v, ok := Option(opts, WorkersOption); ok && v.GetKind() != nil {
		start = min(max(n, lo), hi)
	}
	return start, lo, hi, nil
}

func intOption(opts *structpb.Struct, name string, to *int) error {
	v, ok := Option(opts, name)
	if !ok || v.GetKind() == nil {
		return nil
	}
	switch k := v.GetKind().(type) {
	case *structpb.Value_NumberValue:
		if k.NumberValue == float64(int(k.NumberValue)) {
			*to = int(k.NumberValue)
			return nil
		}
	case *structpb.Value_StringValue:
		if n, err := strconv.Atoi(strings.TrimSpace(k.StringValue)); err == nil {
			*to = n
			return nil
		}
	}
	return fmt.Errorf("job option %s: want a whole number, got %v", name, v.AsInterface())
}

// durationOption reads a duration such as "10s" or "5m", or a number of
// seconds.
func durationOption(opts *structpb.Struct, name string, to *time.Duration) error {
	v, ok := Option(opts, name)
	if !ok || v.GetKind() == nil {
		return nil
	}
	switch k := v.GetKind().(type) {
	case *structpb.Value_NumberValue:
		*to = time.Duration(k.NumberValue * float64(time.Second))
		return nil
	case *structpb.Value_StringValue:
		str := strings.TrimSpace(k.StringValue)
		if secs, err := strconv.ParseFloat(str, 64); err == nil {
			*to = time.Duration(secs * float64(time.Second))
			return nil
		}
		if d, err := time.ParseDuration(str); err == nil {
			*to = d
			return nil
		}
	}
	return fmt.Errorf("job option %s: want a duration such as 10s or 5m, got %v", name, v.AsInterface())
}
