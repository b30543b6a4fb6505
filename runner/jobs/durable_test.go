package jobs

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/store"
	"github.com/beam-runner/beam-runner/testsupport/testwait"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/structpb"
)

// serveDurable serves a Service keeping its records in st, like newEnv.
// The returned stop shuts the service down without closing st.
func serveDurable(t *testing.T, exec Executor, st *store.Store, root string, tweak ...func(*Options)) (*env, func()) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Executor: exec, ArtifactRoot: root, Store: st,
		StagingEndpoint: func() string { return lis.Addr().String() }}
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
	stop := func() {
		cc.Close()
		srv.Stop()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		svc.Close(ctx)
	}
	return &env{svc: svc, cli: jobpb.NewJobServiceClient(cc), cc: cc, root: root}, stop
}

func openStore(t *testing.T, dir string) *store.Store {
	t.Helper()
	st, err := store.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestRecordsSurviveRestart: a finished job's list entry, state, messages,
// metrics and pipeline answer from a new service on the same store; a job
// still running when its store was let go ends FAILED on the restart with
// a message naming LOOPBACK, and its artifact directory is removed.
func TestRecordsSurviveRestart(t *testing.T) {
	dir, root := t.TempDir(), t.TempDir()
	st := openStore(t, dir)
	metrics := []*pipepb.MonitoringInfo{{Urn: "beam:metric:user:sum_int64:v1", Payload: []byte{7}}}
	release := make(chan struct{})
	// Subscribers see RUNNING before it is synced; Running returns after.
	stuckSaved := make(chan struct{}, 1)
	e1, stop1 := serveDurable(t, &fakeExec{execute: func(ctx context.Context, j *Job) error {
		j.Running()
		j.Message(jobpb.JobMessage_JOB_MESSAGE_BASIC, "hello from "+j.Name)
		j.SetMetrics(metrics)
		if j.Name == "stuck" {
			stuckSaved <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return nil
	}}, st, root)
	done := e1.submit(t, pipeline())
	e1.waitState(t, done, jobpb.JobState_DONE)
	wantEvents := strings.Join(e1.events(t, done), " ")

	loopback, _ := structpb.NewStruct(map[string]any{"beam:option:environment_type:v1": "LOOPBACK"})
	prep, err := e1.cli.Prepare(ctxT(t), &jobpb.PrepareJobRequest{Pipeline: pipeline(), JobName: "stuck", PipelineOptions: loopback})
	if err != nil {
		t.Fatal(err)
	}
	run, err := e1.cli.Run(ctxT(t), &jobpb.RunJobRequest{PreparationId: prep.GetPreparationId()})
	if err != nil {
		t.Fatal(err)
	}
	stuck := run.GetJobId()
	e1.waitState(t, stuck, jobpb.JobState_RUNNING)
	if _, err := testwait.RecvErr(context.Background(), 30*time.Second, stuckSaved); err != nil {
		t.Fatalf("the stuck job's RUNNING was not saved: %v", err)
	}
	artifactDir := root + "/" + stuck
	if err := os.MkdirAll(artifactDir, 0o755); err != nil {
		t.Fatal(err)
	}
	// The server "dies": its store goes away under the running job.
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	close(release)
	stop1()

	e2, stop2 := serveDurable(t, &fakeExec{execute: blockUntilCancelled}, openStore(t, dir), root)
	defer stop2()
	jobs, err := e2.cli.GetJobs(ctxT(t), &jobpb.GetJobsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]jobpb.JobState_Enum{}
	for _, info := range jobs.GetJobInfo() {
		states[info.GetJobId()] = info.GetState()
	}
	if len(states) != 2 || states[done] != jobpb.JobState_DONE || states[stuck] != jobpb.JobState_FAILED {
		t.Fatalf("GetJobs after restart = %v, want %s DONE and %s FAILED", states, done, stuck)
	}
	if got := strings.Join(e2.events(t, done), " "); got != wantEvents {
		t.Errorf("replayed events = %q, want %q", got, wantEvents)
	}
	m, err := e2.cli.GetJobMetrics(ctxT(t), &jobpb.GetJobMetricsRequest{JobId: done})
	if err != nil || len(m.GetMetrics().GetAttempted()) != 1 || m.GetMetrics().GetAttempted()[0].GetPayload()[0] != 7 {
		t.Errorf("GetJobMetrics after restart = %v, %v", m, err)
	}
	p, err := e2.cli.GetPipeline(ctxT(t), &jobpb.GetJobPipelineRequest{JobId: done})
	if err != nil || p.GetPipeline().GetComponents().GetEnvironments()["go"] == nil {
		t.Errorf("GetPipeline after restart = %v, %v", p, err)
	}
	evs := e2.events(t, stuck)
	if len(evs) < 2 || evs[len(evs)-1] != "FAILED" || !strings.Contains(evs[len(evs)-2], "LOOPBACK") || !strings.Contains(evs[len(evs)-2], "RUNNING") {
		t.Errorf("interrupted job's events = %q, want an error naming LOOPBACK and its state, then FAILED", evs)
	}
	if _, err := os.Stat(artifactDir); !os.IsNotExist(err) {
		t.Errorf("artifact dir of the interrupted job: stat err %v, want it removed", err)
	}
	// New jobs still run and are listed beside the restored ones.
	id := e2.submit(t, pipeline())
	e2.waitState(t, id, jobpb.JobState_RUNNING)
	if _, err := e2.cli.Cancel(ctxT(t), &jobpb.CancelJobRequest{JobId: id}); err != nil {
		t.Fatal(err)
	}
	e2.waitState(t, id, jobpb.JobState_CANCELLED)
}

// resumer is a fakeExec that can resume jobs.
type resumer struct{ fakeExec }

func (resumer) Resumable(*Job) error { return nil }

// TestLiveJobResumes: a job live when its server died runs again on the
// restart, given its last checkpoint, and ends normally; a job that never
// checkpointed runs again from the beginning (Resume nil). A finished
// job's checkpoint is deleted with its terminal state.
func TestLiveJobResumes(t *testing.T) {
	dir, root := t.TempDir(), t.TempDir()
	st := openStore(t, dir)
	e1, stop1 := serveDurable(t, &resumer{fakeExec{execute: func(ctx context.Context, j *Job) error {
		if j.Name == "ckpt" {
			for _, c := range []string{"first", "second"} {
				if err := j.Checkpoint([]byte(c)); err != nil {
					return err
				}
			}
		}
		// RUNNING, which the test waits for, comes after the checkpoints:
		// a checkpoint no longer holds the record's lock, so GetState does
		// not wait for one.
		j.Running()
		<-ctx.Done()
		return ctx.Err()
	}}}, st, root)
	ids := map[string]string{}
	for _, name := range []string{"ckpt", "fresh"} {
		prep, err := e1.cli.Prepare(ctxT(t), &jobpb.PrepareJobRequest{Pipeline: pipeline(), JobName: name})
		if err != nil {
			t.Fatal(err)
		}
		run, err := e1.cli.Run(ctxT(t), &jobpb.RunJobRequest{PreparationId: prep.GetPreparationId()})
		if err != nil {
			t.Fatal(err)
		}
		ids[name] = run.GetJobId()
		e1.waitState(t, ids[name], jobpb.JobState_RUNNING)
	}
	if err := st.Close(); err != nil { // the server "dies"
		t.Fatal(err)
	}
	stop1()

	st2 := openStore(t, dir)
	defer st2.Close() // after stop2: waits for the ended jobs' reclaims
	resumed := make(chan string, 2)
	e2, stop2 := serveDurable(t, &resumer{fakeExec{execute: func(ctx context.Context, j *Job) error {
		resumed <- j.Name + ":" + string(j.Resume)
		if j.Retrieval == nil {
			return fmt.Errorf("no artifact retrieval for the resumed job")
		}
		j.Running()
		return nil
	}}}, st2, root)
	defer stop2()
	got := map[string]bool{<-resumed: true, <-resumed: true}
	if !got["ckpt:second"] || !got["fresh:"] {
		t.Errorf("resumed with %v, want ckpt from its last checkpoint and fresh from the beginning", got)
	}
	for name, id := range ids {
		e2.waitState(t, id, jobpb.JobState_DONE)
		if evs := strings.Join(e2.events(t, id), " | "); !strings.Contains(evs, "resumes from") {
			t.Errorf("%s's events %q: want a message saying it resumed", name, evs)
		}
		for _, part := range []string{"k", oldCkptPart} { // "k" prefixes ckptPart and ckptPtrPart
			if err := st2.Scan(jobKey(id, part), func(k, _ []byte) error {
				return fmt.Errorf("checkpoint key %q kept after the job ended", k)
			}); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
	}
}
