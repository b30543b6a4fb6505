package engine

import "github.com/beam-runner/beam-runner/runner/coders"

// CheckpointFlight asks every running bundle of a splittable stage that
// has run at least minAge (milliseconds) to checkpoint itself: to stop at
// what it has read and give the rest back as a residual. A checkpoint
// holds what a running bundle owns, so after a crash a source bundle
// that ran for minutes is read again from its start; checkpointed this
// way, its progress is committed and the next checkpoint holds it.
// Draining jobs have their own checkpoints (Drain).
func (e *Engine) CheckpointFlight(minAge int64) {
	if e.draining {
		return
	}
	for _, st := range e.flow.stages {
		if !st.spec.Splittable {
			continue
		}
		for _, b := range oldestFirst(st.flight) {
			if e.flow.now-b.started < minAge || e.flow.now-b.splitAt < splitMinAge {
				continue
			}
			b.splitAt = e.flow.now // keeps the dynamic split policy off it
			e.splits = append(e.splits, SplitRequest{Bundle: b.ID})
		}
	}
}

// streamCheckpointAge is how long, by default (Spec.StreamBundleMs, the
// job option streaming_bundle_time), a bundle of a streaming job's
// splittable stage runs before it is checkpointed. An unbounded source
// (KafkaIO's read) claims records for as long as they keep coming, and
// what it read counts downstream, and moves its watermark, only once its
// bundle commits: without this, the 8 MiB output bound
// (memoryCheckpoints) ended a Kafka read at 2,000 records/s only every
// 40 s or so, and each window's count came that late. One second is the
// bundle time Flink's portable runner uses by default in streaming; a
// checkpoint is one round trip and one new bundle.
const streamCheckpointAge = 1000 // milliseconds

// streamCheckpoints are the checkpoints (splits keeping nothing) of the
// bundles of a streaming job's stages with TimedCheckpoints that ran
// streamCheckpointAge since they started or were last checkpointed this
// way, and sent output since. A bundle that sent nothing has nothing to
// commit; an idle source ends its bundle itself (KafkaIO's after its 2 s
// poll), and with the watermark its last poll saw, which a checkpoint
// taken earlier would not carry.
func (e *Engine) streamCheckpoints() []SplitRequest {
	if !e.flow.spec.Streaming {
		return nil
	}
	age := e.flow.spec.StreamBundleMs
	if age <= 0 {
		age = streamCheckpointAge
	}
	var out []SplitRequest
	for _, st := range e.flow.stages {
		if !st.spec.TimedCheckpoints {
			continue
		}
		for _, b := range oldestFirst(st.flight) {
			// Not right after another split: that may have been a
			// checkpoint already (memoryCheckpoints).
			if e.flow.now-b.ckptAt < age || e.flow.now-b.splitAt < min(splitMinAge, age) || b.out == b.outAtTimed {
				continue
			}
			b.ckptAt, b.splitAt = e.flow.now, e.flow.now // splitAt keeps the dynamic split policy off it
			b.outAtTimed = b.out
			out = append(out, SplitRequest{Bundle: b.ID})
		}
	}
	return out
}

// Finished returns the stages that are done for good, in plan order:
// their output watermark is at the end of time and nothing of theirs
// runs. In a resumed batch job these are the stages it does not run again.
func (e *Engine) Finished() []string {
	var out []string
	for _, st := range e.flow.stages {
		if st.outWM >= coders.MaxTimestamp && len(st.flight) == 0 && len(st.pending) == 0 {
			out = append(out, st.spec.ID)
		}
	}
	return out
}
