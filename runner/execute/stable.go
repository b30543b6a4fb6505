package execute

import (
	"context"
	"time"

	"github.com/beam-runner/beam-runner/runner/engine"
	"github.com/beam-runner/beam-runner/runner/jobs"
)

// In a streaming job that checkpoints, a DoFn requiring stable input may
// read only input a checkpoint holds: otherwise a crash could restore the
// job to before its producer committed that input, and the producer, run
// again, could hand it different elements than it saw before the crash.
// So before such a stage's bundles start, the driver checkpoints: the
// snapshot gives the bundles' input back to their stage
// (SnapshotRequeuingFlight), and a restored job runs them on exactly it.
// A retried bundle's input was checkpointed when it first started. The
// cost is a checkpoint per round of new stable-input bundles.

// needsStableCheckpoint reports whether bundles about to start need a
// checkpoint first: some is a first attempt of a stable-input stage and
// the job checkpoints at all (a non-durable job has nothing to restore
// from, and a retry within a run reuses its kept input). A batch job's
// stable-input checkpoints go on after its periodic ones stop for size.
func needsStableCheckpoint(bs []engine.Bundle, stable func(stage string) bool, checkpointing bool) bool {
	if !checkpointing {
		return false
	}
	for _, b := range bs {
		if b.Attempt <= 1 && stable(b.Stage) {
			return true
		}
	}
	return false
}

// checkpointStableInput checkpoints before bundles start, if they need
// it; they wait for the returned channel (nil if none is needed), which
// closes once the checkpoint is written.
func (d *driver) checkpointStableInput(ctx context.Context, bs []engine.Bundle) <-chan struct{} {
	if d.ckpt.interval <= 0 {
		return nil
	}
	if d.stable == nil {
		d.stable = map[string]bool{}
		for id, ss := range d.stages {
			d.stable[id] = d.r.plan.StableInput(ss.stage)
		}
	}
	if !needsStableCheckpoint(bs, func(id string) bool { return d.stable[id] }, true) {
		return nil
	}
	return d.checkpointNow(ctx, time.Now(), jobs.TriggerStableInput)
}
