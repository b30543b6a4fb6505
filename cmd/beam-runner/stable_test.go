package main

import (
	"context"
	"fmt"
	"github.com/beam-runner/beam-runner/testsupport/gopipe"
	"github.com/beam-runner/beam-runner/testsupport/testkit"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal/extworker"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal/runnerlib"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/periodic"
	"google.golang.org/protobuf/proto"
)

func init() {
	beam.RegisterFunction(randomTag)
	beam.RegisterFunction(checkStable)
}

// stableRun is what the DoFns of TestStableInputCheckpointedFirst saw:
// per value, how many checkpoints the server had saved when it was
// emitted and when the stable DoFn read it. Its harness runs in this
// process, so globals reach it.
var stableRun struct {
	sync.Mutex
	log           string // the server's JSON log
	emitted, read map[string]int
}

func checkpointsLogged() int {
	data, _ := os.ReadFile(stableRun.log)
	return strings.Count(string(data), `"msg":"checkpoint saved"`)
}

// randomTag is nondeterministic: each tick gets a fresh random value.
func randomTag(_ []byte, emit func(string)) {
	v := fmt.Sprintf("%016x", rand.Uint64())
	stableRun.Lock()
	stableRun.emitted[v] = checkpointsLogged()
	stableRun.Unlock()
	emit(v)
}

func checkStable(v string) {
	stableRun.Lock()
	stableRun.read[v] = checkpointsLogged()
	stableRun.Unlock()
}

// TestStableInputCheckpointedFirst: in a streaming job on a server that
// checkpoints (a state dir, and an interval so long that no checkpoint is
// due on its own), a DoFn requiring stable input behind a random one
// reads each value only after a checkpoint holding it was saved, so a
// crash could not hand it other values. Go's harness in this process; the
// flag set in the proto as Java's translation sets it.
func TestStableInputCheckpointedFirst(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server binary")
	}
	bin := buildServer(t)
	tmp := t.TempDir()
	stableRun.log = filepath.Join(tmp, "server.log")
	stableRun.emitted, stableRun.read = map[string]int{}, map[string]int{}
	port := testkit.FreePort(t)
	srv := startBinaryTo(t, createLog(t, stableRun.log), bin, port, t.TempDir(),
		"--checkpoint_interval=1h", "--serve_http=false", "--log_level=debug", "--log_kind=json")
	defer func() { srv.Process.Kill(); srv.Wait() }()
	endpoint := "localhost:" + strconv.Itoa(port)
	jobClient(t, endpoint)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pb := stableStreamingPipeline(t, ctx)
	if _, err := runnerlib.Execute(ctx, pb, endpoint, &runnerlib.JobOptions{Name: "stable", Loopback: true}, false); err != nil {
		t.Fatalf("job: %v", err)
	}
	stableRun.Lock()
	defer stableRun.Unlock()
	if len(stableRun.read) < 5 {
		t.Fatalf("the stable DoFn read %d values, want at least 5", len(stableRun.read))
	}
	for v, at := range stableRun.read {
		if e, ok := stableRun.emitted[v]; !ok || at <= e {
			t.Errorf("value %s: emitted after %d checkpoints (emitted: %v), read by the stable DoFn after %d: no checkpoint in between", v, e, ok, at)
		}
	}
}

// stableStreamingPipeline: an unbounded impulse ticking for 3 s, a random
// value per tick, read by a DoFn marked as requiring stable input, with
// workers from a loopback pool in this process.
func stableStreamingPipeline(t *testing.T, ctx context.Context) *pipepb.Pipeline {
	t.Helper()
	pool, err := extworker.StartLoopback(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Stop(context.Background()) })
	p, s := beam.NewPipelineWithRoot()
	now := time.Now()
	ticks := periodic.Impulse(s, now, now.Add(3*time.Second), 200*time.Millisecond, false)
	vals := beam.ParDo(s.Scope("Random"), randomTag, ticks)
	beam.ParDo0(s.Scope("Stable"), checkStable, vals)
	pb, err := gopipe.Marshal(ctx, p, "beam:env:external:v1", pool.EnvironmentConfig(ctx))
	if err != nil {
		t.Fatal(err)
	}
	markStableUnder(t, pb, "Stable")
	return pb
}

// markStableUnder sets requires_stable_input on the one ParDo under the
// composite named name, and the pipeline's requirement.
func markStableUnder(t *testing.T, pb *pipepb.Pipeline, name string) {
	t.Helper()
	ts := pb.GetComponents().GetTransforms()
	for _, tr := range ts {
		if tr.GetUniqueName() != name || len(tr.GetSubtransforms()) != 1 {
			continue
		}
		leaf := ts[tr.GetSubtransforms()[0]]
		var pl pipepb.ParDoPayload
		if err := proto.Unmarshal(leaf.GetSpec().GetPayload(), &pl); err != nil {
			t.Fatal(err)
		}
		pl.RequiresStableInput = true
		b, err := proto.Marshal(&pl)
		if err != nil {
			t.Fatal(err)
		}
		leaf.Spec.Payload = b
		pb.Requirements = append(pb.Requirements, "beam:requirement:pardo:stable_input:v1")
		return
	}
	t.Fatalf("no composite %q with one ParDo", name)
}
