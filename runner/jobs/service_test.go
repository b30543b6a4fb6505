package jobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal/runnerlib"
	"github.com/beam-runner/beam-runner/runner/artifacts"
	"github.com/beam-runner/beam-runner/testsupport/testwait"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// fakeExec is a test-only Executor whose behaviour is set per test.
type fakeExec struct {
	validate func(*pipepb.Pipeline) error
	execute  func(context.Context, *Job) error
}

func (f *fakeExec) Validate(p *pipepb.Pipeline) error {
	if f.validate != nil {
		return f.validate(p)
	}
	return nil
}

func (f *fakeExec) Execute(ctx context.Context, j *Job) error { return f.execute(ctx, j) }

// blockUntilCancelled is an Execute that runs until its job is cancelled.
func blockUntilCancelled(ctx context.Context, j *Job) error {
	j.Running()
	<-ctx.Done()
	return ctx.Err()
}

type env struct {
	svc  *Service
	cli  jobpb.JobServiceClient
	cc   *grpc.ClientConn
	root string
}

// newEnv serves a Service with exec over real gRPC on loopback.
func newEnv(t *testing.T, exec Executor, tweak ...func(*Options)) *env {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	opts := Options{
		Executor:        exec,
		ArtifactRoot:    root,
		StagingEndpoint: func() string { return lis.Addr().String() },
	}
	for _, f := range tweak {
		f(&opts)
	}
	svc := NewService(opts)
	srv := grpc.NewServer()
	jobpb.RegisterJobServiceServer(srv, svc)
	jobpb.RegisterArtifactStagingServiceServer(srv, svc.Staging())
	go srv.Serve(lis)
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cc.Close()
		srv.Stop()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := svc.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return &env{svc: svc, cli: jobpb.NewJobServiceClient(cc), cc: cc, root: root}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func pipeline() *pipepb.Pipeline {
	return &pipepb.Pipeline{Components: &pipepb.Components{
		Environments: map[string]*pipepb.Environment{"go": {Urn: "beam:env:loopback:v1"}},
	}}
}

// submit prepares and runs p, returning the job id.
func (e *env) submit(t *testing.T, p *pipepb.Pipeline) string {
	t.Helper()
	prep, err := e.cli.Prepare(ctxT(t), &jobpb.PrepareJobRequest{Pipeline: p, JobName: "test job"})
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	run, err := e.cli.Run(ctxT(t), &jobpb.RunJobRequest{PreparationId: prep.GetPreparationId()})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return run.GetJobId()
}

// events reads the whole message stream as short strings, until EOF.
func (e *env) events(t *testing.T, id string) []string {
	t.Helper()
	st, err := e.cli.GetMessageStream(ctxT(t), &jobpb.JobMessagesRequest{JobId: id})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for {
		m, err := st.Recv()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("stream: %v (after %v)", err, out)
		}
		if s := m.GetStateResponse(); s != nil {
			out = append(out, s.GetState().String())
		} else {
			out = append(out, fmt.Sprintf("%v:%v", m.GetMessageResponse().GetImportance(), m.GetMessageResponse().GetMessageText()))
		}
	}
}

func (e *env) waitState(t *testing.T, id string, want jobpb.JobState_Enum) {
	t.Helper()
	testwait.NoErr(t, 10*time.Second, fmt.Sprintf("job %v to reach %v", id, want), func() error {
		st, err := e.cli.GetState(ctxT(t), &jobpb.GetJobStateRequest{JobId: id})
		if err == nil && st.GetState() != want {
			err = fmt.Errorf("job %v is %v", id, st.GetState())
		}
		return err
	})
}

func TestLateSubscriberSeesHistoryThenEOF(t *testing.T) {
	metrics := []*pipepb.MonitoringInfo{{Urn: "beam:metric:user:sum_int64:v1", Payload: []byte{3}}}
	e := newEnv(t, &fakeExec{execute: func(ctx context.Context, j *Job) error {
		j.Running()
		j.Message(jobpb.JobMessage_JOB_MESSAGE_BASIC, "hello")
		j.SetMetrics(metrics)
		return nil
	}})
	id := e.submit(t, pipeline())
	e.waitState(t, id, jobpb.JobState_DONE)
	want := "STOPPED STARTING RUNNING JOB_MESSAGE_BASIC:hello DONE"
	for i := 0; i < 2; i++ { // every subscriber gets the full history
		if got := strings.Join(e.events(t, id), " "); got != want {
			t.Errorf("events = %q, want %q", got, want)
		}
	}
	st, err := e.cli.GetStateStream(ctxT(t), &jobpb.GetJobStateRequest{JobId: id})
	if err != nil {
		t.Fatal(err)
	}
	var states []string
	for ev, err := st.Recv(); err != io.EOF; ev, err = st.Recv() {
		if err != nil {
			t.Fatal(err)
		}
		states = append(states, ev.GetState().String())
	}
	if got := strings.Join(states, " "); got != "STOPPED STARTING RUNNING DONE" {
		t.Errorf("state stream = %q", got)
	}
	m, err := e.cli.GetJobMetrics(ctxT(t), &jobpb.GetJobMetricsRequest{JobId: id})
	if err != nil || len(m.GetMetrics().GetAttempted()) != 1 || len(m.GetMetrics().GetCommitted()) != 1 {
		t.Errorf("GetJobMetrics = %v, %v", m, err)
	}
	jobs, _ := e.cli.GetJobs(ctxT(t), &jobpb.GetJobsRequest{})
	if len(jobs.GetJobInfo()) != 1 || jobs.GetJobInfo()[0].GetState() != jobpb.JobState_DONE || jobs.GetJobInfo()[0].GetJobName() != "test job" {
		t.Errorf("GetJobs = %v", jobs)
	}
}

func TestFailureSendsErrorBeforeFailed(t *testing.T) {
	e := newEnv(t, &fakeExec{execute: func(ctx context.Context, j *Job) error {
		return errors.New("kaboom in ParDo(x)")
	}})
	id := e.submit(t, pipeline())
	// Beam's Go client must report our error text.
	err := runnerlib.WaitForCompletion(ctxT(t), e.cli, id)
	if err == nil || !strings.Contains(err.Error(), "kaboom in ParDo(x)") {
		t.Errorf("WaitForCompletion = %v, want the job's error", err)
	}
	want := "STOPPED STARTING JOB_MESSAGE_ERROR:kaboom in ParDo(x) FAILED"
	if got := strings.Join(e.events(t, id), " "); got != want {
		t.Errorf("events = %q, want %q", got, want)
	}
}

func TestPanickingExecutorFailsOnlyItsJob(t *testing.T) {
	e := newEnv(t, &fakeExec{execute: func(ctx context.Context, j *Job) error {
		if j.Name == "bad" {
			panic("engine bug")
		}
		return nil
	}})
	prep, _ := e.cli.Prepare(ctxT(t), &jobpb.PrepareJobRequest{Pipeline: pipeline(), JobName: "bad"})
	run, err := e.cli.Run(ctxT(t), &jobpb.RunJobRequest{PreparationId: prep.GetPreparationId()})
	if err != nil {
		t.Fatal(err)
	}
	e.waitState(t, run.GetJobId(), jobpb.JobState_FAILED)
	e.waitState(t, e.submit(t, pipeline()), jobpb.JobState_DONE)
}

func TestCancelStopsBlockedJob(t *testing.T) {
	e := newEnv(t, &fakeExec{execute: blockUntilCancelled})
	id := e.submit(t, pipeline())
	e.waitState(t, id, jobpb.JobState_RUNNING)
	// A live subscriber, attached before the cancel, sees it end.
	got := make(chan []string)
	go func() { got <- e.events(t, id) }()
	resp, err := e.cli.Cancel(ctxT(t), &jobpb.CancelJobRequest{JobId: id})
	if err != nil {
		t.Fatal(err)
	}
	if s := resp.GetState(); s != jobpb.JobState_CANCELLING && s != jobpb.JobState_CANCELLED {
		t.Errorf("Cancel returned %v", s)
	}
	want := "STOPPED STARTING RUNNING CANCELLING CANCELLED"
	if g := strings.Join(<-got, " "); g != want {
		t.Errorf("events = %q, want %q", g, want)
	}
	// Cancelling again is harmless.
	if resp, err := e.cli.Cancel(ctxT(t), &jobpb.CancelJobRequest{JobId: id}); err != nil || resp.GetState() != jobpb.JobState_CANCELLED {
		t.Errorf("second Cancel = %v, %v", resp, err)
	}
}

func TestConcurrentJobsAreIndependent(t *testing.T) {
	var allRunning sync.WaitGroup
	allRunning.Add(5)
	e := newEnv(t, &fakeExec{execute: func(ctx context.Context, j *Job) error {
		if j.Name == "blocker" {
			return blockUntilCancelled(ctx, j)
		}
		j.Running()
		// The five run side by side: each ends only once all have begun.
		allRunning.Done()
		return testwait.ClosedErr(10*time.Second, waitDone(&allRunning))
	}})
	prep, _ := e.cli.Prepare(ctxT(t), &jobpb.PrepareJobRequest{Pipeline: pipeline(), JobName: "blocker"})
	run, _ := e.cli.Run(ctxT(t), &jobpb.RunJobRequest{PreparationId: prep.GetPreparationId()})
	var wg sync.WaitGroup
	for i := 0; i < 5; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := e.submit(t, pipeline())
			if err := runnerlib.WaitForCompletion(ctxT(t), e.cli, id); err != nil {
				t.Errorf("job %v: %v", id, err)
			}
		}()
	}
	wg.Wait()
	e.waitState(t, run.GetJobId(), jobpb.JobState_RUNNING)
	if _, ok := e.svc.IdleSince(); ok {
		t.Error("service idle while a job runs")
	}
	e.cli.Cancel(ctxT(t), &jobpb.CancelJobRequest{JobId: run.GetJobId()})
	e.waitState(t, run.GetJobId(), jobpb.JobState_CANCELLED)
}

func TestBadRequests(t *testing.T) {
	e := newEnv(t, &fakeExec{
		validate: func(*pipepb.Pipeline) error { return errors.New(`transform "x": unknown urn "beam:y"`) },
		execute:  func(context.Context, *Job) error { return nil },
	})
	ctx := ctxT(t)
	check := func(what string, err error, want codes.Code) {
		t.Helper()
		if status.Code(err) != want {
			t.Errorf("%s: got %v, want %v", what, err, want)
		}
	}
	_, err := e.cli.Prepare(ctx, &jobpb.PrepareJobRequest{})
	check("Prepare(nil pipeline)", err, codes.InvalidArgument)
	_, err = e.cli.Prepare(ctx, &jobpb.PrepareJobRequest{Pipeline: pipeline()})
	check("Prepare(invalid)", err, codes.InvalidArgument)
	if err == nil || !strings.Contains(err.Error(), `unknown urn "beam:y"`) {
		t.Errorf("Prepare error %v does not carry the validation text", err)
	}
	_, err = e.cli.Run(ctx, &jobpb.RunJobRequest{})
	check("Run(empty)", err, codes.InvalidArgument)
	_, err = e.cli.Run(ctx, &jobpb.RunJobRequest{PreparationId: "nope"})
	check("Run(unknown)", err, codes.NotFound)
	_, err = e.cli.GetState(ctx, &jobpb.GetJobStateRequest{JobId: "nope"})
	check("GetState", err, codes.NotFound)
	_, err = e.cli.GetState(ctx, &jobpb.GetJobStateRequest{})
	check("GetState(empty)", err, codes.InvalidArgument)
	_, err = e.cli.GetPipeline(ctx, &jobpb.GetJobPipelineRequest{JobId: "nope"})
	check("GetPipeline", err, codes.NotFound)
	_, err = e.cli.Cancel(ctx, &jobpb.CancelJobRequest{JobId: "nope"})
	check("Cancel", err, codes.NotFound)
	_, err = e.cli.Drain(ctx, &jobpb.DrainJobRequest{JobId: "nope"})
	check("Drain", err, codes.NotFound)
	_, err = e.cli.GetJobMetrics(ctx, &jobpb.GetJobMetricsRequest{JobId: "nope"})
	check("GetJobMetrics", err, codes.NotFound)
	st, _ := e.cli.GetMessageStream(ctx, &jobpb.JobMessagesRequest{JobId: "nope"})
	_, err = st.Recv()
	check("GetMessageStream", err, codes.NotFound)
	ss, _ := e.cli.GetStateStream(ctx, &jobpb.GetJobStateRequest{JobId: "nope"})
	_, err = ss.Recv()
	check("GetStateStream", err, codes.NotFound)
	_, err = e.cli.DescribePipelineOptions(ctx, &jobpb.DescribePipelineOptionsRequest{})
	check("DescribePipelineOptions", err, codes.OK)
}

func TestDrainWithoutDrainerIsUnimplemented(t *testing.T) {
	e := newEnv(t, &fakeExec{execute: blockUntilCancelled})
	id := e.submit(t, pipeline())
	_, err := e.cli.Drain(ctxT(t), &jobpb.DrainJobRequest{JobId: id})
	if status.Code(err) != codes.Unimplemented {
		t.Errorf("Drain = %v, want Unimplemented", err)
	}
	e.cli.Cancel(ctxT(t), &jobpb.CancelJobRequest{JobId: id})
}

// drainExec drains by ending Execute successfully.
type drainExec struct {
	fakeExec
	drained chan struct{}
}

func (d *drainExec) Drain(string) error { close(d.drained); return nil }

func TestDrain(t *testing.T) {
	d := &drainExec{drained: make(chan struct{})}
	d.execute = func(ctx context.Context, j *Job) error {
		j.Running()
		<-d.drained
		return nil
	}
	e := newEnv(t, d)
	id := e.submit(t, pipeline())
	e.waitState(t, id, jobpb.JobState_RUNNING)
	if _, err := e.cli.Drain(ctxT(t), &jobpb.DrainJobRequest{JobId: id}); err != nil {
		t.Fatal(err)
	}
	want := "STOPPED STARTING RUNNING DRAINING DRAINED"
	if got := strings.Join(e.events(t, id), " "); got != want {
		t.Errorf("events = %q, want %q", got, want)
	}
}

func TestUnrunPreparationsExpire(t *testing.T) {
	e := newEnv(t, &fakeExec{execute: func(context.Context, *Job) error { return nil }})
	prep, err := e.cli.Prepare(ctxT(t), &jobpb.PrepareJobRequest{Pipeline: pipeline()})
	if err != nil {
		t.Fatal(err)
	}
	if _, idle := e.svc.IdleSince(); idle {
		t.Error("idle with a pending preparation")
	}
	if n := e.svc.expirePrepared(time.Now()); n != 0 {
		t.Errorf("expired %d fresh preparations", n)
	}
	if n := e.svc.expirePrepared(time.Now().Add(DefaultPrepareTTL)); n != 1 {
		t.Errorf("expired %d, want 1", n)
	}
	_, err = e.cli.Run(ctxT(t), &jobpb.RunJobRequest{PreparationId: prep.GetPreparationId()})
	if status.Code(err) != codes.NotFound {
		t.Errorf("Run after expiry = %v, want NotFound", err)
	}
	if _, idle := e.svc.IdleSince(); !idle {
		t.Error("not idle after expiry")
	}
}

// TestStagingThroughService stages with Beam's Go client against the
// endpoint Prepare returns, checks the job sees the staged file, and that
// the file is gone once the job has ended.
func TestStagingThroughService(t *testing.T) {
	src := filepath.Join(t.TempDir(), "worker")
	if err := os.WriteFile(src, []byte("binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	var staged string
	e := newEnv(t, &fakeExec{execute: func(ctx context.Context, j *Job) error {
		deps := j.Pipeline.GetComponents().GetEnvironments()["go"].GetDependencies()
		var pl pipepb.ArtifactFilePayload
		proto.Unmarshal(deps[0].GetTypePayload(), &pl)
		staged = pl.GetPath()
		if b, err := os.ReadFile(staged); err != nil || string(b) != "binary" {
			return fmt.Errorf("staged file %q: %q, %v", staged, b, err)
		}
		if !strings.HasPrefix(staged, j.ArtifactDir) {
			return fmt.Errorf("staged %q outside %q", staged, j.ArtifactDir)
		}
		return nil
	}})
	p := pipeline()
	tp, _ := proto.Marshal(&pipepb.ArtifactFilePayload{Path: src})
	p.Components.Environments["go"].Dependencies = []*pipepb.ArtifactInformation{{
		TypeUrn: artifacts.TypeFile, TypePayload: tp, RoleUrn: "beam:artifact:role:go_worker_binary:v1",
	}}
	ctx := ctxT(t)
	prep, err := e.cli.Prepare(ctx, &jobpb.PrepareJobRequest{Pipeline: p})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runnerlib.Stage(ctx, prep.GetPreparationId(), prep.GetArtifactStagingEndpoint().GetUrl(), src, prep.GetStagingSessionToken()); err != nil {
		t.Fatalf("Stage: %v", err)
	}
	run, err := e.cli.Run(ctx, &jobpb.RunJobRequest{PreparationId: prep.GetPreparationId()})
	if err != nil {
		t.Fatal(err)
	}
	if err := runnerlib.WaitForCompletion(ctx, e.cli, run.GetJobId()); err != nil {
		t.Fatal(err)
	}
	if staged == "" {
		t.Fatal("executor saw no staged artifact")
	}
	if _, err := os.Stat(filepath.Dir(staged)); !os.IsNotExist(err) {
		t.Errorf("artifact dir still there after the job: %v", err)
	}
	got, err := e.cli.GetPipeline(ctx, &jobpb.GetJobPipelineRequest{JobId: run.GetJobId()})
	if err != nil || !proto.Equal(got.GetPipeline().GetComponents().GetEnvironments()["go"].GetDependencies()[0],
		mustFileDep(staged, "beam:artifact:role:go_worker_binary:v1")) {
		t.Errorf("GetPipeline deps = %v, %v", got.GetPipeline().GetComponents().GetEnvironments()["go"], err)
	}
}

func mustFileDep(path, role string) *pipepb.ArtifactInformation {
	sum := "9a3a45d01531a20e89ac6ae10b0b0beb0492acd7216a368aa062d1a5fecaf9cd" // sha256("binary")
	tp, _ := proto.Marshal(&pipepb.ArtifactFilePayload{Path: path, Sha256: sum})
	return &pipepb.ArtifactInformation{TypeUrn: artifacts.TypeFile, TypePayload: tp, RoleUrn: role}
}

// planner is a fakeExec that plans at Prepare (jobs.Planner): a pipeline
// without environments it refuses.
type planner struct {
	fakeExec
	plans atomic.Int32
}

type built struct{ envs int }

func (p *planner) Plan(pb *pipepb.Pipeline) (any, error) {
	p.plans.Add(1)
	if len(pb.GetComponents().GetEnvironments()) == 0 {
		return nil, errors.New("no plan for you")
	}
	return &built{len(pb.GetComponents().GetEnvironments())}, nil
}

// A Planner's plan is built once, at Prepare, and handed to the job's
// Execute; one it refuses fails Prepare, naming why.
func TestPlannerPlansOnceAtPrepare(t *testing.T) {
	got := make(chan any, 1)
	ex := &planner{}
	ex.execute = func(ctx context.Context, j *Job) error { got <- j.Prepared; j.Running(); return nil }
	e := newEnv(t, ex)
	id := e.submit(t, pipeline())
	e.waitState(t, id, jobpb.JobState_DONE)
	if b, ok := (<-got).(*built); !ok || b.envs != 1 || ex.plans.Load() != 1 {
		t.Errorf("Execute got %v after %d plans, want the one plan built at Prepare", b, ex.plans.Load())
	}
	_, err := e.cli.Prepare(ctxT(t), &jobpb.PrepareJobRequest{Pipeline: &pipepb.Pipeline{}, JobName: "refused"})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "no plan for you") {
		t.Errorf("Prepare = %v, want InvalidArgument naming the planner's error", err)
	}
}

// waitDone closes its channel when wg's count reaches zero.
func waitDone(wg *sync.WaitGroup) <-chan struct{} {
	ch := make(chan struct{})
	go func() { wg.Wait(); close(ch) }()
	return ch
}
