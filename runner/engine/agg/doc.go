// Package agg is the pure state machine of one GroupByKey transform: it
// buffers encoded values by (encoded key, window), runs the windowing
// strategy's trigger, and emits panes.
//
// It follows the engine's rules (see docs/design.md): no I/O, no clock
// reads, no goroutines, and deterministic output. Time only moves when the caller says
// so (AdvanceWatermark, AdvanceProcessingTime), and every iteration over
// keys or windows is in a sorted order.
//
// Semantics follow Beam's reference implementations: the trigger state
// machines of Java's runners-core and Python's trigger.py, and the pane,
// lateness and garbage-collection rules of Java's ReduceFnRunner. Where the
// two differ the choice is documented at the code that makes it.
//
// Triggers are evaluated when input arrives, when the input watermark
// passes a window's end or garbage-collection time, and when processing
// time reaches a timer a processing-time trigger armed. For input, the
// caller chooses how often: outside BeginInput/EndInput each Add is asked
// on its own (as Flink and the Go integration tests expect, e.g. Always
// fires one pane per element); within them, once per window the batch
// reached, at EndInput, as Java's ReduceFnRunner does per bundle of a key's
// input. The engine batches a batch job's whole input (its triggers are
// asked when the input ends) and a streaming job's chunk while the
// GroupByKey's consumers are backed up.
//
// Two different things put values back into a GroupByKey: a combiner tree
// (tree.go) hands partial groups of a lifted combine's accumulators to the
// SDK and takes each combined one back (TakeCombines, AddCombined,
// FinishCombine); a custom merging WindowFn has the SDK decide which
// windows merge (sdkmerge.go: TakeWindowMergeRequests, ApplyWindowMerges).
package agg
