package execute

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/engine"
	"github.com/beam-runner/beam-runner/runner/jobs"
)

func init() {
	beam.RegisterFunction(emitRandom)
	beam.RegisterFunction(stableSink)
}

// stableLog is what the DoFns below saw; the harness runs in this
// process (LOOPBACK), so a global reaches it.
var stableLog struct {
	sync.Mutex
	produced [][]int64 // per run of emitRandom
	failed   []int64   // what stableSink failed on
	seen     []int64   // what stableSink processed after its failure
}

const stableValues = 20

// emitRandom is nondeterministic: run again, it emits other values.
// Each value is logged before it is emitted, as emitting may fail.
func emitRandom(_ []byte, emit func(int64)) {
	stableLog.Lock()
	stableLog.produced = append(stableLog.produced, nil)
	run := len(stableLog.produced) - 1
	stableLog.Unlock()
	for range stableValues {
		v := rand.Int64()
		stableLog.Lock()
		stableLog.produced[run] = append(stableLog.produced[run], v)
		stableLog.Unlock()
		emit(v)
	}
}

// stableSink fails on the first value it sees, as a sink whose first
// write is interrupted, and records the rest.
func stableSink(v int64) error {
	stableLog.Lock()
	defer stableLog.Unlock()
	if len(stableLog.failed) == 0 {
		stableLog.failed = append(stableLog.failed, v)
		return fmt.Errorf("deliberate first failure on %d", v)
	}
	stableLog.seen = append(stableLog.seen, v)
	return nil
}

// A Go DoFn marked as requiring stable input (in the proto, as Java's
// translation marks @RequiresStableInput; the Go SDK has no such mark)
// behind a DoFn emitting random values: its bundle fails once and runs
// again on exactly the values it was first given, which the random DoFn
// produced once.
func TestStableInputAcrossRetry(t *testing.T) {
	stableLog.Lock()
	stableLog.produced, stableLog.failed, stableLog.seen = nil, nil, nil
	stableLog.Unlock()
	p, s := beam.NewPipelineWithRoot()
	vals := beam.ParDo(s.Scope("Random"), emitRandom, beam.Impulse(s))
	beam.ParDo0(s.Scope("StableSink"), stableSink, vals)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	j := &jobs.Job{ID: "test", Name: t.Name()}
	if err := runOnEdited(ctx, New(Options{MaxBundleAttempts: 2}), p, j, map[string]any{}, markStable("StableSink")); err != nil {
		t.Fatalf("job failed: %v", err)
	}
	stableLog.Lock()
	defer stableLog.Unlock()
	if len(stableLog.produced) != 1 {
		t.Fatalf("the random DoFn ran %d times, want once: its output was not kept for the retry", len(stableLog.produced))
	}
	want := slices.Sorted(slices.Values(stableLog.produced[0]))
	got := slices.Sorted(slices.Values(stableLog.seen))
	if len(stableLog.failed) != 1 || !slices.Contains(got, stableLog.failed[0]) || !slices.Equal(got, want) {
		t.Errorf("failed on %v, then processed %v; the random DoFn produced %v", stableLog.failed, got, want)
	}
}

// markStable sets requires_stable_input on the ParDo under the composite
// with the given name.
func markStable(name string) func(*pipepb.Pipeline) error {
	return func(pb *pipepb.Pipeline) error {
		ts := pb.GetComponents().GetTransforms()
		for _, tr := range ts {
			if tr.GetUniqueName() != name || len(tr.GetSubtransforms()) != 1 {
				continue
			}
			leaf := ts[tr.GetSubtransforms()[0]]
			pb.Requirements = append(pb.Requirements, "beam:requirement:pardo:stable_input:v1")
			return editParDo(leaf, func(pl *pipepb.ParDoPayload) bool {
				pl.RequiresStableInput = true
				return true
			})
		}
		return fmt.Errorf("no composite %q with one ParDo", name)
	}
}

// Before a stable-input stage's bundles first start in a job that
// checkpoints, the driver checkpoints; not for retries, other stages, or
// jobs that never checkpoint.
func TestNeedsStableCheckpoint(t *testing.T) {
	stable := func(id string) bool { return id == "s2" }
	first, retry, other := engine.Bundle{Stage: "s2", Attempt: 1}, engine.Bundle{Stage: "s2", Attempt: 2}, engine.Bundle{Stage: "s1", Attempt: 1}
	for _, tc := range []struct {
		bs            []engine.Bundle
		checkpointing bool
		want          bool
	}{
		{[]engine.Bundle{other, first}, true, true},
		{[]engine.Bundle{first}, false, false},
		{[]engine.Bundle{retry}, true, false},
		{[]engine.Bundle{other}, true, false},
		{nil, true, false},
	} {
		if got := needsStableCheckpoint(tc.bs, stable, tc.checkpointing); got != tc.want {
			t.Errorf("bundles %+v, checkpointing %v: %v, want %v", tc.bs, tc.checkpointing, got, tc.want)
		}
	}
}
