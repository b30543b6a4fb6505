package execute

import (
	"context"
	"fmt"
	"github.com/beam-runner/beam-runner/runner/workers"
	"github.com/beam-runner/beam-runner/testsupport/gopipe"
	"github.com/beam-runner/beam-runner/testsupport/syncbuf"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal/extworker"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"
	"github.com/beam-runner/beam-runner/runner/jobs"
	"github.com/beam-runner/beam-runner/runner/placement"
	"github.com/beam-runner/beam-runner/testsupport/testwait"
	"github.com/beam-runner/beam-runner/worker"
	"google.golang.org/protobuf/types/known/structpb"
)

// runOnPools runs p with an EXTERNAL environment asking for the server's
// worker pools (worker.PoolsEndpoint). pools builds the server's pools
// from the address of a real Go worker pool this test serves.
func runOnPools(t *testing.T, p *beam.Pipeline, pools func(live string) string, options map[string]any) error {
	t.Helper()
	_, err := runOnPoolsLogged(t, p, pools, options)
	return err
}

// runOnPoolsLogged is runOnPools returning the executor's log too, and
// the live pool's address.
func runOnPoolsLogged(t *testing.T, p *beam.Pipeline, pools func(live string) string, options map[string]any) (*poolRun, error) {
	t.Helper()
	return runOnPoolsWatched(t, p, pools, options, io.Discard)
}

// runOnPoolsWatched is runOnPoolsLogged with the executor's log also
// written to watch, for a test that acts on what the runner logs.
func runOnPoolsWatched(t *testing.T, p *beam.Pipeline, pools func(live string) string, options map[string]any, watch io.Writer) (*poolRun, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	live, err := extworker.StartLoopback(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Stop(ctx)
	pr := &poolRun{live: live.EnvironmentConfig(ctx)}
	spec, err := placement.ParsePools(pools(pr.live))
	if err != nil {
		t.Fatal(err)
	}
	j := &jobs.Job{ID: "test", Name: t.Name()}
	if j.Pipeline, err = gopipe.Marshal(ctx, p, worker.URNExternal, worker.PoolsEndpoint); err != nil {
		t.Fatal(err)
	}
	if j.Options, err = structpb.NewStruct(options); err != nil {
		t.Fatal(err)
	}
	e := New(Options{Workers: workers.Options{Pools: spec, StartTimeout: 20 * time.Second},
		Logger: slog.New(slog.NewTextHandler(io.MultiWriter(&pr.log, watch), nil))})
	if err := e.Validate(j.Pipeline); err != nil {
		t.Fatal(err)
	}
	return pr, e.Execute(ctx, j)
}

type poolRun struct {
	live string
	log  syncbuf.Buffer
}

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	return lis.Addr().String()
}

func init() {
	beam.RegisterFunction(slowly)
	beam.RegisterFunction(untilLateJoins)
}

// lateJoined closes once a worker of the late pool connected; the harness
// runs in this process, so a global reaches it.
var lateJoined chan struct{}

// untilLateJoins holds its element until a worker of the late pool
// connected, so the job runs until then.
func untilLateJoins(s string) (string, error) {
	if err := testwait.ClosedErr(time.Minute, lateJoined); err != nil {
		return "", fmt.Errorf("no worker of the late pool connected: %w", err)
	}
	return s, nil
}

// slowly takes a while per element, so that a job lasts long enough for
// pools to come and go while it runs.
func slowly(s string) string {
	time.Sleep(20 * time.Millisecond)
	return s
}

func countWords(s beam.Scope) {
	counts := stats.Count(s, beam.Create(s, "a", "b", "a", "c", "a"))
	passert.Equals(s, beam.ParDo(s, formatCount, counts), "a:3", "b:1", "c:1")
}

// slowWords is countWords over n words that take 20ms each.
func slowWords(s beam.Scope, n int) {
	var words []any
	for i := 0; i < n; i++ {
		words = append(words, string(rune('a'+i%3)))
	}
	counts := stats.Count(s, beam.ParDo(s, slowly, beam.Create(s, words...)))
	a, b, c := (n+2)/3, (n+1)/3, n/3
	passert.Equals(s, beam.ParDo(s, formatCount, counts), fmt.Sprintf("a:%d", a), fmt.Sprintf("b:%d", b), fmt.Sprintf("c:%d", c))
}

// A job's workers start on its pools, as many as each runs; a pool that
// does not answer is marked down and the job runs on the others.
func TestJobRunsOnPoolsPastADownOne(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	slowWords(s, 50)
	dead := closedAddr(t)
	pr, err := runOnPoolsLogged(t, p, func(live string) string { return fmt.Sprintf("go=%s,%s/2", dead, live) }, nil)
	if err != nil {
		t.Fatal(err)
	}
	log := pr.log.String()
	if !strings.Contains(log, fmt.Sprintf("pools=%s,%s/2", dead, pr.live)) {
		t.Errorf("the job did not plan two workers on %s:\n%s", pr.live, log)
	}
	if n := strings.Count(log, `msg="worker connected"`); n != 2 || strings.Count(log, "pool="+pr.live) != 2 {
		t.Errorf("want two workers connected from %s, got %d:\n%s", pr.live, n, log)
	}
	if !strings.Contains(log, `msg="worker pool down"`) || !strings.Contains(log, "pool="+dead) {
		t.Errorf("the pool at %s was not marked down:\n%s", dead, log)
	}
}

// A pool down when the job starts is probed until it answers, then runs
// workers of the job too.
func TestPoolThatAnswersAgainIsUsed(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	beam.ParDo(s, untilLateJoins, beam.Create(s, "a", "b", "c"))
	_, port, _ := net.SplitHostPort(closedAddr(t))
	late := "localhost:" + port
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	down := make(chan struct{})
	lateJoined = make(chan struct{})
	watch := io.MultiWriter(signalOn(down, `msg="worker pool down"`, "pool="+late),
		signalOn(lateJoined, `msg="worker connected"`, "pool="+late))
	started := make(chan error, 1)
	go func() { // the late pool starts once the runner has marked it down
		err := testwait.ClosedErr(time.Minute, down)
		if started <- err; err != nil || ctx.Err() != nil {
			return
		}
		n, _ := strconv.Atoi(port)
		if pool, err := extworker.StartLoopback(ctx, n); err == nil {
			defer pool.Stop(context.Background())
			<-ctx.Done()
		}
	}()
	pr, err := runOnPoolsWatched(t, p, func(live string) string { return "go=" + live + "," + late }, nil, watch)
	if err != nil {
		t.Fatal(err)
	}
	if err := testwait.Recv(t, time.Minute, "the late pool's start", started); err != nil {
		t.Fatalf("the late pool was never marked down: %v", err)
	}
	log := pr.log.String()
	for _, want := range []string{`msg="worker pool down"`, `msg="worker pool answers again"`, "pool=" + late} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %s:\n%s", want, log)
		}
	}
	if !strings.Contains(log, `msg="worker connected" job=test env=go worker=test-w0.1-r1 pool=`+late) {
		t.Errorf("no worker connected from %s once it answered:\n%s", late, log)
	}
}

// With every pool of its SDK down the job fails at once, naming each.
func TestNoPoolLeftFailsNamingThem(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	countWords(s)
	d1, d2 := closedAddr(t), closedAddr(t)
	err := runOnPools(t, p, func(string) string { return "go=" + d1 + "," + d2 }, nil)
	if err == nil || !strings.Contains(err.Error(), "no worker pool of SDK go is left: "+d1+" (StartWorker at "+d1) ||
		!strings.Contains(err.Error(), "; "+d2+" (StartWorker at "+d2) {
		t.Fatalf("got %v, want the job to fail naming both pools", err)
	}
}

// A job's worker_pools option takes the place of the server's pools of
// the SDKs it names.
func TestJobOptionReplacesServerPools(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	countWords(s)
	dead := closedAddr(t)
	err := runOnPools(t, p, func(live string) string { return "go=" + live }, map[string]any{jobs.PoolsOption: "go=" + dead})
	if err == nil || !strings.Contains(err.Error(), "no worker pool of SDK go is left: "+dead) {
		t.Fatalf("got %v, want the job's own pool, which is down", err)
	}
	err = runOnPools(t, p, func(string) string { return "" }, map[string]any{jobs.PoolsOption: "go=nope"})
	if err == nil || !strings.Contains(err.Error(), "job option worker_pools: worker pools of go: pool \"nope\": want HOST:PORT") {
		t.Fatalf("a bad option: %v", err)
	}
}

// An environment that asks for pools of an SDK without any fails, saying
// how to name them.
func TestAskingForPoolsWithoutAny(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	countWords(s)
	err := runOnPools(t, p, func(string) string { return "" }, nil)
	if err == nil || !strings.Contains(err.Error(), "asks for the server's worker pools of SDK go") || !strings.Contains(err.Error(), "--worker_pools=go=HOST:PORT") {
		t.Fatalf("got %v", err)
	}
}
