package execute

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"
	"github.com/beam-runner/beam-runner/runner/engine"
	"github.com/beam-runner/beam-runner/runner/userstate"
)

func TestCheckpointRoundTrip(t *testing.T) {
	in := checkpoint{engine: []byte("engine state"), state: nil,
		metrics: []*pipepb.MonitoringInfo{{Urn: "beam:metric:user:sum_int64:v1", Payload: []byte{42}}},
		scaling: []byte(`{"workers":{"go":3}}`)}
	data, err := in.encode()
	if err != nil {
		t.Fatal(err)
	}
	out, err := decodeCheckpoint(data)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.engine, in.engine) || len(out.state) != 0 || len(out.metrics) != 1 || out.metrics[0].GetPayload()[0] != 42 || !bytes.Equal(out.scaling, in.scaling) {
		t.Errorf("decoded %+v, want %+v", out, in)
	}
}

// TestCheckpointVersion1StillReads: a checkpoint an older server wrote
// (three sections, no autoscaling state) resumes on this one.
func TestCheckpointVersion1StillReads(t *testing.T) {
	v1 := append([]byte(checkpointMagic), 1)
	for _, sec := range []string{"engine", "state", ""} {
		v1 = append(v1, byte(len(sec)))
		v1 = append(v1, sec...)
	}
	c, err := decodeCheckpoint(v1)
	if err != nil || string(c.engine) != "engine" || string(c.state) != "state" || c.scaling != nil {
		t.Fatalf("version 1: %+v, %v; want its engine and state, no scaling", c, err)
	}
}

// TestCheckpointRefusals: a damaged checkpoint, or one of another format
// version, is refused with an error saying which, never a panic.
func TestCheckpointRefusals(t *testing.T) {
	good, err := checkpoint{engine: []byte("e"), state: []byte("s")}.encode()
	if err != nil {
		t.Fatal(err)
	}
	newer := append([]byte(checkpointMagic), checkpointVersion+1)
	newer = append(newer, good[len(checkpointMagic)+1:]...)
	for name, tc := range map[string]struct {
		data []byte
		want string
	}{
		"empty":     {nil, "not a beam-runner checkpoint"},
		"newer":     {newer, "format version 3"},
		"truncated": {good[:len(good)-1], "cut short"},
		"trailing":  {append(append([]byte{}, good...), 0), "after its last section"},
	} {
		if _, err := decodeCheckpoint(tc.data); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want one containing %q", name, err, tc.want)
		}
	}
	for i := range good {
		decodeCheckpoint(good[:i]) // must not panic
	}
}

func TestCheckpointPolicy(t *testing.T) {
	t0 := time.Unix(1000, 0)
	p := checkpointPolicy{interval: 10 * time.Second, last: t0}
	if p.due(t0.Add(9 * time.Second)) {
		t.Error("due before the interval passed")
	}
	if !p.due(t0.Add(10 * time.Second)) {
		t.Error("not due once the interval passed")
	}
	p.taken(t0.Add(12 * time.Second))
	if p.due(t0.Add(21*time.Second)) || !p.due(t0.Add(22*time.Second)) {
		t.Error("the interval does not count from the last checkpoint")
	}
	off := checkpointPolicy{last: t0}
	if off.due(t0.Add(time.Hour)) {
		t.Error("interval 0 must disable checkpoints")
	}
}

// A checkpoint that takes long stretches the interval to costShare times
// its cost; a batch job's checkpoints stop once one passes maxBytes,
// which is said once.
func TestCheckpointPolicyCost(t *testing.T) {
	t0 := time.Unix(1000, 0)
	p := checkpointPolicy{interval: time.Second, last: t0, maxBytes: 100}
	if p.measured(500*time.Millisecond, 100) {
		t.Error("stopped at maxBytes, not past it")
	}
	if p.due(t0.Add(4*time.Second)) || !p.due(t0.Add(5*time.Second)) {
		t.Error("a 500ms checkpoint must stretch a 1s interval to 5s")
	}
	p.measured(time.Millisecond, 50)
	if !p.due(t0.Add(time.Second)) {
		t.Error("a cheap checkpoint must bring the interval back")
	}
	if !p.measured(time.Millisecond, 101) || p.measured(time.Millisecond, 101) {
		t.Error("passing maxBytes must stop checkpoints once, and say so once")
	}
	if p.due(t0.Add(time.Hour)) {
		t.Error("a stopped policy is never due")
	}
	spill := checkpointPolicy{interval: time.Second, last: t0, maxBytes: 100}
	if spill.spilled(100) || !spill.spilled(101) || spill.spilled(101) || spill.due(t0.Add(time.Hour)) {
		t.Error("spilling past maxBytes must stop checkpoints, once")
	}
	stream := checkpointPolicy{interval: time.Second, last: t0}
	if stream.spilled(1 << 40) {
		t.Error("without maxBytes (streaming) spilling never stops checkpoints")
	}
	if stream.measured(time.Millisecond, 1<<40) || !stream.due(t0.Add(time.Second)) {
		t.Error("without maxBytes (streaming) size never stops checkpoints")
	}
	if got := batchCheckpointLimit(0); got != batchCheckpointBytes {
		t.Errorf("limit without a memory limit: %d", got)
	}
	if got := batchCheckpointLimit(4 << 30); got != 1<<30 {
		t.Errorf("limit with 4 GiB of memory: %d, want a quarter", got)
	}
}

// TestResumeRefusesForeignCheckpoint: a job resumed from a checkpoint
// that is damaged, or was taken of another pipeline, fails saying why
// instead of running from a wrong state.
func TestResumeRefusesForeignCheckpoint(t *testing.T) {
	other, err := engine.New(engine.Spec{PColls: map[string]engine.PCollSpec{}})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := other.SnapshotRequeuingFlight()
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := checkpoint{engine: snap, state: userstate.NewStore().Snapshot()}.encode()
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		ckpt []byte
		want string
	}{
		"damaged": {[]byte("BRCKPT\x01garbage"), "resuming job test: checkpoint"},
		"foreign": {foreign, "resuming job test from its checkpoint"},
	} {
		p, s := beam.NewPipelineWithRoot()
		stats.Count(s, beam.Create(s, "a", "b", "a"))
		if err := runResumed(t, p, Options{}, map[string]any{}, tc.ckpt); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want one containing %q", name, err, tc.want)
		}
	}
}
