package agg

import (
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/coders"
)

// Configurations for the Go tests; the scripts write theirs as new's
// arguments (script_test.go).

const fixed = coders.IntervalWindows

func withLateness(c Config, ms int64) Config { c.AllowedLateness = ms; return c }
func accumulating(c Config) Config {
	c.Accumulation = pipepb.AccumulationMode_ACCUMULATING
	return c
}
func withOutputTime(c Config, ot pipepb.OutputTime_Enum) Config { c.OutputTime = ot; return c }
func sessions(trig *pipepb.Trigger) Config {
	c := goSDK(trig, fixed)
	c.Merging = true
	return c
}

// Trigger constructors, shaped like the Go SDK's trigger package.

func tDefault() *pipepb.Trigger {
	return &pipepb.Trigger{Trigger: &pipepb.Trigger_Default_{Default: &pipepb.Trigger_Default{}}}
}
func tAlways() *pipepb.Trigger {
	return &pipepb.Trigger{Trigger: &pipepb.Trigger_Always_{Always: &pipepb.Trigger_Always{}}}
}
func tNever() *pipepb.Trigger {
	return &pipepb.Trigger{Trigger: &pipepb.Trigger_Never_{Never: &pipepb.Trigger_Never{}}}
}
func tCount(n int32) *pipepb.Trigger {
	return &pipepb.Trigger{Trigger: &pipepb.Trigger_ElementCount_{ElementCount: &pipepb.Trigger_ElementCount{ElementCount: n}}}
}
func tRepeat(s *pipepb.Trigger) *pipepb.Trigger {
	return &pipepb.Trigger{Trigger: &pipepb.Trigger_Repeat_{Repeat: &pipepb.Trigger_Repeat{Subtrigger: s}}}
}
func tEOW(early, late *pipepb.Trigger) *pipepb.Trigger {
	return &pipepb.Trigger{Trigger: &pipepb.Trigger_AfterEndOfWindow_{AfterEndOfWindow: &pipepb.Trigger_AfterEndOfWindow{EarlyFirings: early, LateFirings: late}}}
}
func tAll(s ...*pipepb.Trigger) *pipepb.Trigger {
	return &pipepb.Trigger{Trigger: &pipepb.Trigger_AfterAll_{AfterAll: &pipepb.Trigger_AfterAll{Subtriggers: s}}}
}
func tAny(s ...*pipepb.Trigger) *pipepb.Trigger {
	return &pipepb.Trigger{Trigger: &pipepb.Trigger_AfterAny_{AfterAny: &pipepb.Trigger_AfterAny{Subtriggers: s}}}
}
func tEach(s ...*pipepb.Trigger) *pipepb.Trigger {
	return &pipepb.Trigger{Trigger: &pipepb.Trigger_AfterEach_{AfterEach: &pipepb.Trigger_AfterEach{Subtriggers: s}}}
}
func tOrFinally(main, fin *pipepb.Trigger) *pipepb.Trigger {
	return &pipepb.Trigger{Trigger: &pipepb.Trigger_OrFinally_{OrFinally: &pipepb.Trigger_OrFinally{Main: main, Finally: fin}}}
}
func tSyncPT() *pipepb.Trigger {
	return &pipepb.Trigger{Trigger: &pipepb.Trigger_AfterSynchronizedProcessingTime_{AfterSynchronizedProcessingTime: &pipepb.Trigger_AfterSynchronizedProcessingTime{}}}
}
func tPT(tts ...*pipepb.TimestampTransform) *pipepb.Trigger {
	return &pipepb.Trigger{Trigger: &pipepb.Trigger_AfterProcessingTime_{AfterProcessingTime: &pipepb.Trigger_AfterProcessingTime{TimestampTransforms: tts}}}
}
func delay(ms int64) *pipepb.TimestampTransform {
	return &pipepb.TimestampTransform{TimestampTransform: &pipepb.TimestampTransform_Delay_{Delay: &pipepb.TimestampTransform_Delay{DelayMillis: ms}}}
}
func alignTo(period, offset int64) *pipepb.TimestampTransform {
	return &pipepb.TimestampTransform{TimestampTransform: &pipepb.TimestampTransform_AlignTo_{AlignTo: &pipepb.TimestampTransform_AlignTo{Period: period, Offset: offset}}}
}

// goSDK is the windowing strategy the Go SDK writes for WindowInto with a
// trigger (graphx.MarshalWindowingStrategy): discarding by default,
// END_OF_WINDOW, EMIT_IF_NONEMPTY and FIRE_IF_NONEMPTY.
func goSDK(trig *pipepb.Trigger, kind coders.WindowKind) Config {
	return Config{
		Trigger: trig,
		Window:  kind,
		Closing: pipepb.ClosingBehavior_EMIT_IF_NONEMPTY,
		OnTime:  pipepb.OnTimeBehavior_FIRE_IF_NONEMPTY,
	}
}
