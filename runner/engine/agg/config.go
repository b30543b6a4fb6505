package agg

import (
	"fmt"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/coders"
)

// Config is the windowing strategy of one GroupByKey, as the state machine
// needs it.
type Config struct {
	Trigger *pipepb.Trigger // nil is the default trigger
	// Accumulation is DISCARDING (or UNSPECIFIED, the Go SDK's default) or
	// ACCUMULATING. RETRACTING is rejected.
	Accumulation pipepb.AccumulationMode_Enum
	// AllowedLateness in milliseconds; negative is treated as zero.
	AllowedLateness int64
	// OutputTime is the timestamp combiner; UNSPECIFIED is END_OF_WINDOW.
	OutputTime pipepb.OutputTime_Enum
	// Window is how to read window bytes: global, interval or custom.
	Window coders.WindowKind
	// Merging is set for merging window fns: for session windows the GBK
	// merges overlapping interval windows of a key itself; with
	// SDKWindowMerge the SDK's merge_windows decides (sdkmerge.go).
	Merging        bool
	SDKWindowMerge bool
	// Closing and OnTime decide whether empty final and on-time panes are
	// emitted. UNSPECIFIED means Java's defaults: EMIT_IF_NONEMPTY and
	// FIRE_ALWAYS.
	Closing pipepb.ClosingBehavior_Enum
	OnTime  pipepb.OnTimeBehavior_Enum

	// Spill, if set, takes the buffered values of a default-trigger GBK
	// once they pass SpillBudget bytes (see Spill); other configurations
	// keep everything in memory.
	Spill       Spill
	SpillBudget int
	// Hot, if set, takes the values of a spilled key past HotBytes as
	// pages, and its pane carries a state token for them (hot.go); only
	// for output read by SDKs that accept state-backed iterables.
	// HotPrefix starts the GBK's tokens, unique within Hot.
	Hot       Spill
	HotPrefix []byte
	HotBytes  int
	// Combine, if set, makes a default-trigger GBK of a lifted combine a
	// combiner tree (tree.go); other configurations ignore it.
	Combine *CombineTree

	noFastPath bool // tests: always use the general state machine
}

// urnSessions is the one merging window fn the GBK merges itself.
const urnSessions = "beam:window_fn:session_windows:v1"

// ConfigFromStrategy reads a Config from a windowing strategy proto. kind is
// the window coder's kind (see coders.WindowedValueCodec.WindowKind).
func ConfigFromStrategy(ws *pipepb.WindowingStrategy, kind coders.WindowKind) Config {
	return Config{
		Trigger:         ws.GetTrigger(),
		Accumulation:    ws.GetAccumulationMode(),
		AllowedLateness: ws.GetAllowedLateness(),
		OutputTime:      ws.GetOutputTime(),
		Window:          kind,
		Merging:         ws.GetMergeStatus() == pipepb.MergeStatus_NEEDS_MERGE,
		SDKWindowMerge:  ws.GetWindowFn().GetUrn() != urnSessions,
		Closing:         ws.GetClosingBehavior(),
		OnTime:          ws.GetOnTimeBehavior(),
	}
}

// CheckStrategy reports whether a GroupByKey with the windowing strategy,
// over windows of the kind, can be grouped; the error names what cannot.
func CheckStrategy(ws *pipepb.WindowingStrategy, kind coders.WindowKind) error {
	_, err := ConfigFromStrategy(ws, kind).validate()
	return err
}

// settings is a validated Config in the form the hot path wants.
type settings struct {
	trig         *tree
	accumulating bool
	lateness     int64
	outputTime   pipepb.OutputTime_Enum
	window       coders.WindowKind
	merging      bool
	emitEmptyEnd bool // ClosingBehavior EMIT_ALWAYS
	emitEmptyOn  bool // OnTimeBehavior FIRE_ALWAYS
}

func (c Config) validate() (settings, error) {
	s := settings{
		lateness:     max(c.AllowedLateness, 0),
		window:       c.Window,
		merging:      c.Merging,
		emitEmptyEnd: c.Closing == pipepb.ClosingBehavior_EMIT_ALWAYS,
		emitEmptyOn:  c.OnTime != pipepb.OnTimeBehavior_FIRE_IF_NONEMPTY,
	}
	switch c.Accumulation {
	case pipepb.AccumulationMode_UNSPECIFIED, pipepb.AccumulationMode_DISCARDING:
	case pipepb.AccumulationMode_ACCUMULATING:
		s.accumulating = true
	default:
		return s, fmt.Errorf("agg: unsupported accumulation mode %v", c.Accumulation)
	}
	switch c.OutputTime {
	case pipepb.OutputTime_UNSPECIFIED, pipepb.OutputTime_END_OF_WINDOW:
		s.outputTime = pipepb.OutputTime_END_OF_WINDOW
	case pipepb.OutputTime_EARLIEST_IN_PANE, pipepb.OutputTime_LATEST_IN_PANE:
		s.outputTime = c.OutputTime
	default:
		return s, fmt.Errorf("agg: unsupported output time %v", c.OutputTime)
	}
	if c.Window == coders.OtherWindow {
		return s, fmt.Errorf("agg: windows of an opaque coder cannot be grouped: the runner cannot read their end")
	}
	if c.Merging && !c.SDKWindowMerge && c.Window != coders.IntervalWindows {
		return s, fmt.Errorf("agg: session windows must be interval windows")
	}
	t, err := compileTrigger(c.Trigger)
	s.trig = t
	return s, err
}

// gcTime is when a window with max timestamp maxTS is garbage collected: the
// watermark passing it closes the window and makes its data droppably late.
// It stays below MaxTimestamp so the final watermark collects every window.
func (s *settings) gcTime(maxTS int64) int64 {
	if s.lateness >= coders.MaxTimestamp-1-maxTS {
		return coders.MaxTimestamp - 1
	}
	return maxTS + s.lateness
}
