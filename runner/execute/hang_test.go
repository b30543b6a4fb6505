package execute

import (
	"context"
	"errors"
	"github.com/beam-runner/beam-runner/testsupport/gopipe"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"

	"github.com/beam-runner/beam-runner/harness"
	"github.com/beam-runner/beam-runner/runner/bundleio"
	"github.com/beam-runner/beam-runner/runner/engine"
	"github.com/beam-runner/beam-runner/runner/jobs"
	"github.com/beam-runner/beam-runner/runner/metrics"
	"github.com/beam-runner/beam-runner/runner/spec"
	"github.com/beam-runner/beam-runner/runner/userstate"
	"github.com/beam-runner/beam-runner/runner/workers"
	"github.com/beam-runner/beam-runner/testsupport/testwait"
)

func init() {
	beam.RegisterFunction(dropA)
	beam.RegisterFunction(dropB)
}

func dropA([]byte) {}
func dropB([]byte) {}

// fakeHarnesses run bundles without an SDK: the first bundle of stage
// lose loses its worker, every other bundle succeeds, reporting a user
// counter named after its stage; a bundle of stage after runs once
// release is closed.
type fakeHarnesses struct {
	lose, after string
	release     <-chan struct{}
	mu          sync.Mutex
	runs        map[string]int // by stage
}

func (f *fakeHarnesses) ProcessPlaced(ctx context.Context, b harness.Bundle, _ workers.Placement) (harness.Result, error) {
	f.mu.Lock()
	f.runs[b.Descriptor]++
	n := f.runs[b.Descriptor]
	f.mu.Unlock()
	if b.Descriptor == f.lose && n == 1 {
		return harness.Result{}, &harness.WorkerLost{Worker: "w1", During: "processing", Cause: errors.New("its streams ended")}
	}
	if b.Descriptor == f.after {
		select {
		case <-f.release:
		case <-ctx.Done():
			return harness.Result{}, ctx.Err()
		}
	}
	return harness.Result{Monitoring: []*pipepb.MonitoringInfo{userCounter(b.Descriptor)}}, nil
}

func (f *fakeHarnesses) Process(ctx context.Context, b harness.Bundle) (harness.Result, error) {
	return f.ProcessPlaced(ctx, b, workers.Placement{})
}

func (f *fakeHarnesses) Split(context.Context, string, string, float64, int64) (harness.SplitResult, error) {
	return harness.SplitResult{}, errors.New("no splits")
}

func (f *fakeHarnesses) Progress(context.Context, string) ([]*pipepb.MonitoringInfo, error) {
	return nil, errors.New("no progress")
}

func (f *fakeHarnesses) Finalize(context.Context, string) error { return nil }
func (f *fakeHarnesses) Workers() int                           { return 2 }

// userCounter is a user counter of 1 named after stage.
func userCounter(stage string) *pipepb.MonitoringInfo {
	return &pipepb.MonitoringInfo{Urn: metrics.UrnSumInt64, Type: "beam:metrics:sum_int64:v1",
		Labels: map[string]string{"NAMESPACE": "test", "NAME": stage, "PTRANSFORM": stage}, Payload: []byte{1}}
}

// hangingRestart restarts a worker only after hang, or once released.
type hangingRestart struct {
	hang     time.Duration
	started  chan struct{}
	release  chan struct{}
	restarts atomic.Int32
}

func (h *hangingRestart) DescribeLoss(_ context.Context, lost *harness.WorkerLost) string {
	return lost.Error()
}

func (h *hangingRestart) RestartLost(ctx context.Context, envID, failed string) error {
	if h.restarts.Add(1) == 1 {
		close(h.started)
	}
	select {
	case <-time.After(h.hang):
	case <-h.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

func (h *hangingRestart) WorkerOutput(string, bool) string { return "" }

// A worker restart that hangs (30 s) delays no other bundle's commit:
// the driver goes on committing while it runs, bundles of the restarting
// environment wait for it, and the job ends once the retried bundle ran.
func TestHangingRestartDelaysNoOtherCommit(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	beam.ParDo0(s, dropA, beam.Impulse(s))
	beam.ParDo0(s, dropB, beam.Impulse(s))
	pl, err := spec.Plan(gopipe.ForTest(t, p))
	if err != nil {
		t.Fatal(err)
	}
	sdk, err := spec.SDKStages(pl, 0)
	if err != nil || len(sdk) != 2 {
		t.Fatalf("%d SDK stages, %v; want 2", len(sdk), err)
	}
	lose, other := sdk[0].Stage.ID, sdk[1].Stage.ID
	restart := &hangingRestart{hang: 30 * time.Second, started: make(chan struct{}), release: make(chan struct{})}
	fake := &fakeHarnesses{lose: lose, after: other, release: restart.started, runs: map[string]int{}}
	r := &run{opts: New(Options{}).opts, log: slog.Default(), job: &jobs.Job{ID: "hang"}, plan: pl,
		metrics: metrics.NewStore(), state: userstate.NewStore(), drain: newDrainSignal(), workers: restart,
		sinkCodecs: bundleio.NewCodecs(pl), orderedLists: bundleio.OrderedLists(pl)}
	stages := map[string]*sdkStage{}
	for _, st := range sdk {
		_, io, err := pl.Descriptor(st.Stage, "127.0.0.1:1")
		if err != nil {
			t.Fatal(err)
		}
		in, err := bundleio.CodecOf(pl, st.Stage.Inputs[0])
		if err != nil {
			t.Fatal(err)
		}
		stages[st.Stage.ID] = &sdkStage{stage: st.Stage, harness: fake, desc: st.Stage.ID, io: io, input: in}
	}
	es, err := spec.Build(pl, spec.Config{Parallelism: 4, MaxAttempts: 4, StartTime: time.Now().UnixMilli()})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(es)
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { ran <- r.newDriver(eng, checkpointPolicy{}, stages).run(context.Background()) }()

	select {
	case <-restart.started:
	case err := <-ran:
		t.Fatalf("the job ended (%v) before restarting the lost worker", err)
	case <-time.After(20 * time.Second):
		t.Fatal("the lost worker was not restarted\n" + testwait.Goroutines())
	}
	// Stage other's bundle finished as the restart began: it must be
	// committed long before the restart's 30 s are up.
	testwait.Until(t, 10*time.Second, "stage "+other+"'s bundle to commit during a hanging restart",
		func() bool { return committed(r.metrics, other) })
	if committed(r.metrics, lose) {
		t.Errorf("stage %s's retried bundle ran before its worker's restart ended", lose)
	}
	close(restart.release)
	if err := testwait.Recv(t, 20*time.Second, "the job to end after the restart", ran); err != nil {
		t.Fatalf("job: %v", err)
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	if fake.runs[lose] != 2 || fake.runs[other] != 1 || !committed(r.metrics, lose) {
		t.Errorf("runs %v, want stage %s twice (its retry committed) and %s once", fake.runs, lose, other)
	}
}

// committed reports whether a bundle of stage committed its counter.
func committed(m *metrics.Store, stage string) bool {
	return slices.ContainsFunc(m.Results(), func(mi *pipepb.MonitoringInfo) bool {
		return mi.GetLabels()["NAME"] == stage
	})
}
