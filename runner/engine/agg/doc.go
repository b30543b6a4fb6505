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
// Triggers are evaluated after every element (as Flink and the Go
// integration tests expect, e.g. Always fires one pane per element), when
// the input watermark passes a window's end or garbage-collection time, and
// when processing time reaches a timer a processing-time trigger armed.
package agg
