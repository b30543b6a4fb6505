package engine

import (
	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/runner/engine/agg"
	"github.com/beam-runner/beam-runner/runner/stagekind"
)

// StageSpec describes one stage to the engine.
type StageSpec struct {
	ID   string
	Kind stagekind.Kind
	// Inputs are the PCollections whose watermarks bound this stage: the
	// main input of an SDK or GBK stage, every input of a flatten.
	Inputs []string
	// CopyInputs are a flatten's inputs whose data the engine forwards to
	// the flatten's output (the others are written there by SDK stages).
	CopyInputs []string
	// SideInputs are read by the stage's bundles. In batch, and for a
	// stateful stage, each must be complete before a bundle runs; in
	// streaming, a bundle of a stateless stage takes an element once the
	// side input windows its windows map to are complete (sidegate.go).
	SideInputs []string
	// SideWindows lays out each side input's windows, by PCollection; a
	// side input missing here must be complete first.
	SideWindows map[string]SideWindowFn
	// Outputs are the PCollections whose watermark this stage sets.
	Outputs []string
	// Agg configures a GBK stage.
	Agg agg.Config
	// WindowMergeStage is the SDK stage that merges a GBK's windows when its
	// WindowFn is a custom merging one (Agg.SDKWindowMerge; mergewin.go).
	WindowMergeStage string
	// TreeStage is, for the GroupByKey of a lifted combine with a
	// combiner tree (Agg.Combine), the stage id its combine bundles carry:
	// the driver runs them with the SDK's merge-accumulators transform
	// alone (combtree.go). TreeMaxBundles caps those in flight below
	// Spec.MaxBundles (0: no cap of its own).
	TreeStage      string
	TreeMaxBundles int
	// Events are a TestStream stage's events, in order.
	Events []Event
	// Keyed marks a stateful SDK stage: its main input is KV and each key
	// is processed by one bundle at a time.
	Keyed bool
	// Lanes is, for a stateful stage, how many workers run its bundles:
	// each key's bundles ask for the same one of them (lanes.go). 0 or
	// 1: any worker.
	Lanes int
	// Timers are the timer families of a stateful stage.
	Timers []TimerSpec
	// TimeSorted makes a stateful stage see each key's input in event-time
	// order (RequiresTimeSortedInput; sorted.go).
	TimeSorted bool
	// AllowedLateness of a stateful stage's input: its windows' state is
	// garbage once the watermark passes their end plus this.
	AllowedLateness int64
	// Splittable marks a stage that processes restrictions of a splittable
	// DoFn: its running bundles may be split to use idle capacity.
	Splittable bool
	// TimedCheckpoints lets a streaming job checkpoint the stage's
	// bundles by time (streamCheckpoints): set for splittable stages
	// whose SDK checkpoints exactly (not Go 2.77's; see sdkenv.CheckpointsExactly).
	TimedCheckpoints bool
	// ProbeBundles starts the stage at one bundle in flight and adds more
	// only while each makes it faster (probe.go): for harnesses whose
	// bundles may not run in parallel (one Python interpreter).
	ProbeBundles bool
	// MaxBundles caps the stage's bundles in flight below Spec.MaxBundles
	// (0: no cap of its own): one per Python worker process, whose
	// bundles would only contend for its interpreter lock.
	MaxBundles int
}

// SideWindowFn is a side input's windowing, as far as the engine needs
// it: when the window a main input window maps to expires, its end plus
// the allowed lateness. Size, Period, Offset and Lateness are
// milliseconds.
type SideWindowFn struct {
	Kind                           SideWindowKind
	Size, Period, Offset, Lateness int64
}

// SideWindowKind is the kind of a side input's WindowFn.
type SideWindowKind int

// Side input WindowFn kinds. With SideWindowsOther (the zero value) the
// engine cannot tell where a mapped window ends, so the side input must
// be complete; so must one in the global window.
const (
	SideWindowsOther SideWindowKind = iota
	SideWindowsGlobal
	SideWindowsFixed
	SideWindowsSliding
)

// EventKind is the kind of a TestStream event.
type EventKind int

// TestStream event kinds.
const (
	AddElements EventKind = iota
	AdvanceWatermark
	AdvanceProcessingTime
)

// Event is one TestStream event, with elements already encoded as
// windowed values of the output's wire coder.
type Event struct {
	Kind      EventKind
	PColl     string // AddElements and AdvanceWatermark: the output affected
	Elements  []byte
	Watermark int64
	Advance   int64 // AdvanceProcessingTime: milliseconds
}

// PCollSpec says how to read a PCollection's encoded elements.
type PCollSpec struct {
	Codec *coders.WindowedValueCodec
	// Key is the KV key coder, set for GBK inputs.
	Key *coders.Codec
}

// Spec is everything the engine needs to run a job.
type Spec struct {
	Stages []StageSpec // topological order
	PColls map[string]PCollSpec
	// Streaming makes SDK stages run bundles as data arrives instead of
	// once their input is complete.
	Streaming bool
	// StreamBundleMs is how long a streaming job's bundle of a stage with
	// TimedCheckpoints runs before it is checkpointed (ckptsplit.go); 0
	// means streamCheckpointAge.
	StreamBundleMs int64
	// MaxBundles bounds the bundles of one stage in flight at once.
	MaxBundles int
	// MinBundleBytes keeps small inputs in one bundle.
	MinBundleBytes int
	// PendingSpill, if set, takes SDK stages' pending input past
	// PendingBudget bytes (pendspill.go); bundles are then cut to at most
	// the budget at a time.
	PendingSpill  agg.Spill
	PendingBudget int
	// MaxAttempts is how many times a failed bundle may run (see
	// Engine.Retry); 0 means once.
	MaxAttempts int
	// PaneRoom is how much pending input a GroupByKey's readers may have
	// before it holds back more of its panes (panes.go); 0 means 4 MiB per
	// bundle slot.
	PaneRoom int
	// Flow turns on flow control for a streaming job (flowctl.go).
	Flow *FlowControl
	// StartTime is the initial processing time: the wall clock for real
	// jobs, a fixed origin for TestStream's virtual time.
	StartTime int64
}
