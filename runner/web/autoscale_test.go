package web_test

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/rtrackers/offsetrange"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/beam-runner/beam-runner/runner/jobs"
	"github.com/beam-runner/beam-runner/runner/web"
	"github.com/beam-runner/beam-runner/testsupport/jobtest"
	"github.com/beam-runner/beam-runner/testsupport/testwait"
	"github.com/chromedp/chromedp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/structpb"
)

func init() {
	beam.RegisterType(reflect.TypeOf((*pacedSource)(nil)).Elem())
	register.Function1x1(slowIdentity)
	register.Function1x0(discardInt)
}

func discardInt(int64) {}

// pacedSource is an unbounded source of the positions [0, N): PerTick of
// them, then a resume after EveryMs, so a streaming job's input rate is
// PerTick per EveryMs. While its Hold names a held flag, it emits nothing
// once it reached Hold positions until the test clears the flag: an idle
// streaming job.
type pacedSource struct {
	N, PerTick, EveryMs, Hold int64
}

// sourceHeld holds pacedSources with a Hold; the workers run in the test's
// process (LOOPBACK), so the test can release them.
var sourceHeld atomic.Bool

func (s *pacedSource) CreateInitialRestriction(_ []byte) offsetrange.Restriction {
	return offsetrange.Restriction{Start: 0, End: s.N}
}

func (s *pacedSource) SplitRestriction(_ []byte, r offsetrange.Restriction) []offsetrange.Restriction {
	return []offsetrange.Restriction{r}
}

func (s *pacedSource) RestrictionSize(_ []byte, r offsetrange.Restriction) float64 { return r.Size() }

func (s *pacedSource) CreateTracker(r offsetrange.Restriction) *sdf.LockRTracker {
	return sdf.NewLockRTracker(offsetrange.NewTracker(r))
}

func (s *pacedSource) ProcessElement(rt *sdf.LockRTracker, _ []byte, emit func(int64)) sdf.ProcessContinuation {
	start := rt.GetRestriction().(offsetrange.Restriction).Start
	if s.Hold > 0 && start >= s.Hold && sourceHeld.Load() {
		return sdf.ResumeProcessingIn(time.Duration(s.EveryMs) * time.Millisecond)
	}
	for pos := start; pos < start+s.PerTick; pos++ {
		if !rt.TryClaim(pos) {
			return sdf.StopProcessing()
		}
		emit(pos)
	}
	return sdf.ResumeProcessingIn(time.Duration(s.EveryMs) * time.Millisecond)
}

// slowIdentity spends 20 ms on each element: 50 a second a bundle.
func slowIdentity(n int64) int64 {
	time.Sleep(20 * time.Millisecond)
	return n
}

// logTap keeps the messages the runner logs, to observe worker starts
// and stops.
type logTap struct {
	mu    sync.Mutex
	msgs  []string
	lines []string // with attributes, for dump
}

func (l *logTap) Enabled(context.Context, slog.Level) bool { return true }
func (l *logTap) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logTap) WithGroup(string) slog.Handler            { return l }
func (l *logTap) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, r.Message)
	line := r.Message
	r.Attrs(func(a slog.Attr) bool { line += " " + a.String(); return true })
	l.lines = append(l.lines, line)
	return nil
}

// dump logs what the runner logged, when the test failed.
func (l *logTap) dump(t *testing.T) {
	t.Cleanup(func() {
		if t.Failed() {
			l.mu.Lock()
			defer l.mu.Unlock()
			t.Logf("runner log:\n%s", strings.Join(l.lines, "\n"))
		}
	})
}

func (l *logTap) count(msg string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, m := range l.msgs {
		if m == msg {
			n++
		}
	}
	return n
}

// startScaling runs a server whose jobs autoscale with DS2 between 1 and
// 3 workers, deciding every 300 ms over 2 s rate windows.
func startScaling(t *testing.T, scaleDown time.Duration) (*jobtest.Env, *logTap) {
	tap := &logTap{}
	env := jobtest.StartWith(t, &jobtest.Options{Logger: slog.New(tap), Parallelism: 4, RateWindow: 2 * time.Second,
		Scaling: jobs.Scaling{Mode: jobs.ScalingDS2, MinWorkers: 1, MaxWorkers: 3,
			Interval: 300 * time.Millisecond, ScaleDownInterval: scaleDown}})
	tap.dump(t)
	return env, tap
}

// desired is the job's beam_runner_desired_workers series on /metrics, by
// environment.
func desired(t *testing.T, env *jobtest.Env, job string) map[string]float64 {
	out := map[string]float64{}
	if f := scrape(t, env.WebURL+"/metrics")[web.DesiredWorkersMetric]; f != nil {
		for _, m := range f.GetMetric() {
			if l := labels(m); l["job"] == job {
				out[l["environment"]] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}

// collectMessages reads the job's message stream to its end on a
// goroutine; the channel gets the whole stream.
func collectMessages(ctx context.Context, env *jobtest.Env, id string) <-chan string {
	ch := make(chan string, 1)
	go func() {
		msgs, err := jobtest.Messages(ctx, env.Client, id)
		if err != nil {
			msgs += " | stream error: " + err.Error()
		}
		ch <- msgs
	}()
	return ch
}

var scaleLine = regexp.MustCompile(`autoscaling \(DS2\): env (\S+): (\d+) -> (\d+) workers \(need [^)]*\): ([^|]*)`)

// A streaming job reading 100 elements a second into a stage that takes
// 20 ms an element needs 2 busy seconds a second: from its one worker,
// DS2 at 70% utilization asks for 3. The autoscaler starts two more while
// the job runs (their starts logged, the decision a job message naming
// the rates and exported on /metrics), bundles keep running meanwhile,
// and every element comes out once.
func TestAutoscalingGrowsWorkersMidJob(t *testing.T) {
	env, tap := startScaling(t, 5*time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const n = 800
	want := make([]any, n)
	for i := range want {
		want[i] = int64(i)
	}
	id, _, err := env.Submit(ctx, "autoscale-up", func(s beam.Scope) {
		src := beam.ParDo(s, &pacedSource{N: n, PerTick: 10, EveryMs: 100}, beam.Impulse(s))
		passert.Equals(s, beam.ParDo(s, slowIdentity, beam.Reshuffle(s, src)), want...)
	})
	if err != nil {
		t.Fatal(err)
	}
	msgs := collectMessages(ctx, env, id)
	testwait.Until(t, time.Minute, "a new worker to take bundles while the job runs", func() bool {
		return tap.count("scale-up: worker takes bundles") >= 1
	})
	if st := jobState(t, env, id); st != jobpb.JobState_RUNNING {
		t.Fatalf("the job is %v once a new worker took bundles, want RUNNING: the scale-up came too late to tell", st)
	}
	if d := desired(t, env, id); len(d) != 1 || maxOf(d) < 2 || maxOf(d) > 3 {
		t.Errorf("%s while scaled up = %v, want one environment at 2 or 3", web.DesiredWorkersMetric, d)
	}
	if err := env.AwaitState(ctx, id, jobpb.JobState_DONE, 2*time.Minute); err != nil {
		t.Fatal(err) // passert fails the job on a lost or repeated element
	}
	stream := testwait.Recv(t, time.Minute, "the job's message stream to end", msgs)
	m := scaleLine.FindStringSubmatch(stream)
	if m == nil || m[2] != "1" || (m[3] != "2" && m[3] != "3") || !strings.HasPrefix(m[4], "scale up: need") {
		t.Fatalf("no scale-up 1 -> 2 or 3 in the job's messages: %s", stream)
	}
	if !strings.Contains(stream, "slowIdentity") && !strings.Contains(stream, "rate/slot") {
		t.Errorf("the decision message names no stage rates: %s", stream)
	}
	if d := desired(t, env, id); len(d) != 0 {
		t.Errorf("%s still exported after the job ended: %v", web.DesiredWorkersMetric, d)
	}
	t.Logf("workers started: %d; decision: %s", tap.count("scale-up: worker takes bundles"), m[0])
	rows := scalingRows(t, env, id)
	if len(rows) == 0 || rows[len(rows)-1].Env != m[1] || rows[len(rows)-1].Workers != m[2]+" → "+m[3] || !strings.HasPrefix(rows[len(rows)-1].Why, "scale up") {
		t.Errorf("the job page's scaling timeline = %+v; want its oldest row %s %s → %s, scale up", rows, m[1], m[2], m[3])
	}
}

// scalingRow is a row of the job page's scaling timeline, as shown.
type scalingRow struct {
	Env     string `json:"env"`
	Workers string `json:"workers"`
	Why     string `json:"why"`
}

// scalingRows opens the job's page in Chromium and reads its scaling
// timeline, newest first.
func scalingRows(t *testing.T, env *jobtest.Env, id string) []scalingRow {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	bctx, stop := browser(ctx, t, chromiumPath(t))
	defer stop()
	if err := chromedp.Do(bctx, chromedp.Navigate(env.WebURL+"/#/job/"+id), chromedp.WaitVisible(`#scaling-body tr`)); err != nil {
		t.Fatalf("waiting for the job page's scaling timeline: %v", err)
	}
	rows, err := chromedp.Run(bctx, chromedp.Evaluate[[]scalingRow](`[...document.querySelectorAll("#scaling-body tr")].map(tr => {
			const td = tr.querySelectorAll("td");
			return {env: td[1].textContent, workers: td[2].textContent, why: td[3].textContent};
		})`))
	if err != nil {
		t.Fatalf("reading the job page's scaling timeline: %v", err)
	}
	return rows
}

// A streaming job that started with 3 workers (--workers_per_environment)
// and then waits idle gives its workers back, down to the minimum, once
// the scale-down interval has passed since it started; each drained
// worker is stopped, and the job, released, still ends with every
// element.
func TestAutoscalingDrainsIdleWorkers(t *testing.T) {
	env, tap := startScaling(t, 2*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sourceHeld.Store(true)
	defer sourceHeld.Store(false)
	const n = 40
	want := make([]any, n)
	for i := range want {
		want[i] = int64(i)
	}
	id, _, err := env.SubmitWith(ctx, "autoscale-down", map[string]any{jobs.WorkersOption: "3"}, func(s beam.Scope) {
		src := beam.ParDo(s, &pacedSource{N: n, PerTick: 10, EveryMs: 50, Hold: 20}, beam.Impulse(s))
		passert.Equals(s, beam.ParDo(s, slowIdentity, beam.Reshuffle(s, src)), want...)
	})
	if err != nil {
		t.Fatal(err)
	}
	msgs := collectMessages(ctx, env, id)
	testwait.Until(t, time.Minute, "two idle workers to be drained and stopped", func() bool {
		return tap.count("scale-down: worker drained and stopped") >= 2
	})
	if d := desired(t, env, id); len(d) != 1 || maxOf(d) != 1 {
		t.Errorf("%s once drained = %v, want one environment at 1", web.DesiredWorkersMetric, d)
	}
	sourceHeld.Store(false)
	if err := env.AwaitState(ctx, id, jobpb.JobState_DONE, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	stream := testwait.Recv(t, time.Minute, "the job's message stream to end", msgs)
	m := scaleLine.FindStringSubmatch(stream)
	if m == nil || m[2] != "3" || m[3] != "1" || !strings.HasPrefix(m[4], "scale down") {
		t.Fatalf("no scale-down 3 -> 1 in the job's messages: %s", stream)
	}
	if tap.count("scale-up: worker takes bundles") != 0 {
		t.Errorf("an idle job started workers")
	}
}

func maxOf(m map[string]float64) float64 {
	best := 0.0
	for _, v := range m {
		best = max(best, v)
	}
	return best
}

// A streaming job that scaled up is cancelled at a savepoint; started
// from it on another server, it resumes at the workers it had rather than
// at the minimum, as its checkpoint carries the autoscaler's memory.
func TestAutoscalingResumesAtItsWorkers(t *testing.T) {
	env, tap := startScaling(t, 5*time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pipeline := func(s beam.Scope) {
		src := beam.ParDo(s, &pacedSource{N: 1 << 30, PerTick: 10, EveryMs: 100}, beam.Impulse(s))
		beam.ParDo0(s, discardInt, beam.ParDo(s, slowIdentity, beam.Reshuffle(s, src)))
	}
	id, _, err := env.Submit(ctx, "autoscale-resume", pipeline)
	if err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, time.Minute, "a new worker to take bundles", func() bool {
		return tap.count("scale-up: worker takes bundles") >= 1
	})
	grown := int(maxOf(desired(t, env, id)))
	dir := filepath.Join(t.TempDir(), "savepoint")
	if err := savepointRPC(ctx, env.Endpoint, id, dir, "cancel"); err != nil {
		t.Fatal(err)
	}
	env2, _ := startScaling(t, 5*time.Minute)
	restored, _, err := env2.SubmitWith(ctx, "autoscale-resume", map[string]any{jobs.FromSavepointOption: dir}, pipeline)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("resumes at %d workers (from 1), as last decided before the restart", grown)
	var msgs string
	testwait.Until(t, time.Minute, "the restored job's message that it resumes at its workers", func() bool {
		mctx, mcancel := context.WithTimeout(ctx, 2*time.Second)
		defer mcancel()
		msgs, _ = jobtest.Messages(mctx, env2.Client, restored)
		return strings.Contains(msgs, want)
	})
	if _, err := env2.Client.Cancel(ctx, &jobpb.CancelJobRequest{JobId: restored}); err != nil {
		t.Fatal(err)
	}
}

// savepointRPC asks the server at endpoint for a savepoint of job in dir,
// then does what then says ("", "cancel", "drain").
func savepointRPC(ctx context.Context, endpoint, job, dir, then string) error {
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	req, err := structpb.NewStruct(map[string]any{"job_id": job, "dir": dir, "then": then})
	if err != nil {
		return err
	}
	return conn.Invoke(ctx, jobs.SavepointMethod, req, &structpb.Struct{})
}
