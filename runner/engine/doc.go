// Package engine decides what a job runs next. It holds the runner's
// materialised PCollections and the runner-side transforms over them
// (impulse, flatten, group by key and window), keeps the watermarks and
// stateful stages' keys and timers, and cuts inputs into bundles. It does
// no I/O and reads no clock (boundary_test.go). What it spills goes to a
// Spill (agg.Spill) that queues the writes for a goroutine of its own
// (agg.Queuing): the engine decides what to spill, and keeps it in memory
// while the queue is full, but never waits for the disk.
//
// # Parts
//
//   - Engine (engine.go, ready.go, retry.go, split*.go, snapshot*.go): the
//     bundles: cutting them, those in flight, retries, splits, snapshots.
//   - flow (flow.go, panes.go, combtree.go, mergewin.go, residual.go,
//     pendspill.go): the stages and PCollections, where data written to a
//     PCollection goes, and the watermarks that follow.
//   - keyed (keyed.go, sorted.go, expiry.go): a stateful stage's input by
//     key, its timers and its state windows.
//   - agg: a GroupByKey's windows, triggers, panes, combiner tree and spill.
//   - invariants.go: checks of the bookkeeping above after each driver
//     call, on only under the invariants build tag (make race runs them).
//
// # The driver's calls
//
// The driver (runner/execute) uses the engine through these calls alone:
//
//   - New, Restore: an engine for a Spec, fresh or from a snapshot.
//   - Advance, Ready: each round the driver feeds the engine its events,
//     calls Advance with the Ready it read last (the zero Ready at first),
//     which acknowledges it and makes the engine's next decisions, and
//     reads them with Ready, carrying them out in the order Ready's
//     fields document.
//   - Commit, Fail, Retry (and MaxAttempts, for its messages): a bundle's
//     end.
//   - ApplySplit: what a running bundle gave up by a split.
//   - AdvanceProcessingTime, Tick, Drain: processing time, the driver's
//     clock tick (split policy), and the start of a drain.
//   - NoteOutput, NoteWork: a running bundle's output bytes and work so
//     far, for the memory checkpoints and the concurrency probe.
//   - Watermark, SideData, Dropped: reads, for live statistics, side
//     inputs and the elements GroupByKeys dropped as late.
//   - TakeSnapshot: a checkpoint's snapshot, at any point; it references
//     spilled pending input, which its Bytes reads back off the driver
//     (SnapshotRequeuingFlight is both at once).
//   - CheckpointFlight: before a checkpoint, asks long-running bundles of
//     splittable stages to checkpoint themselves (split requests in the
//     next Ready), so the snapshot holds their progress.
//   - Finished: the stages done for good, which a resumed job reports and
//     does not run again.
package engine
