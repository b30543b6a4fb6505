package jobs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/savepoint"
	"google.golang.org/protobuf/types/known/structpb"
)

func TestSavepointDir(t *testing.T) {
	bare := &Service{}
	if _, err := bare.savepointDir("j1", ""); err == nil || !strings.Contains(err.Error(), "keeps no --state_dir: name the savepoint's directory") {
		t.Errorf("no dir and no state dir: %v", err)
	}
	if _, err := bare.savepointDir("j1", "rel/sp"); err == nil || !strings.Contains(err.Error(), `savepoint directory "rel/sp": give an absolute path`) {
		t.Errorf("a relative dir: %v", err)
	}
	if got, err := bare.savepointDir("j1", "/a/b/../sp"); err != nil || got != "/a/sp" {
		t.Errorf("an absolute dir: %q, %v", got, err)
	}
	dir := t.TempDir()
	st := openStore(t, dir)
	defer st.Close()
	durable := &Service{opts: Options{Store: st}}
	got, err := durable.savepointDir("j1", "")
	if err != nil || filepath.Dir(got) != filepath.Join(st.Dir(), "savepoints") || !strings.HasPrefix(filepath.Base(got), "j1-") {
		t.Errorf("the default dir: %q, %v; want a new one under %s", got, err, filepath.Join(st.Dir(), "savepoints"))
	}
}

func TestFromSavepointOptionRefusals(t *testing.T) {
	s := &Service{}
	opts := func(v *structpb.Value) *structpb.Struct {
		return &structpb.Struct{Fields: map[string]*structpb.Value{"beam:option:from_savepoint:v1": v}}
	}
	if ckpt, err := s.fromSavepoint(nil, &structpb.Struct{}); ckpt != nil || err != nil {
		t.Errorf("no option: %v, %v", ckpt, err)
	}
	if _, err := s.fromSavepoint(nil, opts(structpb.NewNumberValue(3))); err == nil || !strings.Contains(err.Error(), "option from_savepoint: want a savepoint directory, got 3") {
		t.Errorf("a number: %v", err)
	}
	// An executor without savepoints cannot start from one.
	if _, err := s.fromSavepoint(nil, opts(structpb.NewStringValue(t.TempDir()))); err == nil || !strings.Contains(err.Error(), "cannot start jobs from savepoints") {
		t.Errorf("no Savepointer: %v", err)
	}
}

// savepointResumer is a resumer that starts jobs from savepoints of any
// shape.
type savepointResumer struct{ resumer }

func (savepointResumer) Savepoint(context.Context, string, bool, func(Taken) error) error {
	return fmt.Errorf("no savepoints here")
}

func (savepointResumer) CheckUpdate(*pipepb.Pipeline, []string, *pipepb.Pipeline, *structpb.Struct, RestoreOptions) error {
	return nil
}

func (savepointResumer) Restore(sp *savepoint.Savepoint, _ *pipepb.Pipeline, _ *structpb.Struct, _ RestoreOptions) (Restored, error) {
	return Restored{Checkpoint: sp.Checkpoint}, nil
}

// TestJobFromSavepointRestartsFromIt: a job started from a savepoint
// gets its checkpoint as Resume, and a server restart before the job's
// own first checkpoint starts it from the savepoint again, not from the
// beginning; if the savepoint is gone by then, the job fails saying so.
func TestJobFromSavepointRestartsFromIt(t *testing.T) {
	dir, root := t.TempDir(), t.TempDir()
	spDir := filepath.Join(t.TempDir(), "sp")
	sp, err := savepoint.New("old", "old", pipeline(), []byte("saved"), 1, nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := savepoint.Write(spDir, sp); err != nil {
		t.Fatal(err)
	}
	st := openStore(t, dir)
	started := make(chan string, 2)
	e1, stop1 := serveDurable(t, &savepointResumer{resumer{fakeExec{execute: func(ctx context.Context, j *Job) error {
		started <- string(j.Resume)
		j.Running()
		<-ctx.Done()
		return ctx.Err()
	}}}}, st, root)
	ids := map[string]string{}
	for _, name := range []string{"kept", "lost"} {
		sp := spDir
		if name == "lost" {
			sp = filepath.Join(t.TempDir(), "lost")
			if err := os.CopyFS(sp, os.DirFS(spDir)); err != nil {
				t.Fatal(err)
			}
		}
		opts := &structpb.Struct{Fields: map[string]*structpb.Value{"beam:option:from_savepoint:v1": structpb.NewStringValue(sp)}}
		prep, err := e1.cli.Prepare(ctxT(t), &jobpb.PrepareJobRequest{Pipeline: pipeline(), JobName: name, PipelineOptions: opts})
		if err != nil {
			t.Fatal(err)
		}
		run, err := e1.cli.Run(ctxT(t), &jobpb.RunJobRequest{PreparationId: prep.GetPreparationId()})
		if err != nil {
			t.Fatal(err)
		}
		ids[name] = run.GetJobId()
		if got := <-started; got != "saved" {
			t.Errorf("job %s started with Resume %q, want the savepoint's checkpoint", name, got)
		}
		e1.waitState(t, ids[name], jobpb.JobState_RUNNING)
		if name == "lost" {
			os.RemoveAll(sp)
		}
	}
	if err := st.Close(); err != nil { // the server "dies"
		t.Fatal(err)
	}
	stop1()

	st2 := openStore(t, dir)
	defer st2.Close()
	resumed := make(chan string, 1)
	e2, stop2 := serveDurable(t, &savepointResumer{resumer{fakeExec{execute: func(ctx context.Context, j *Job) error {
		resumed <- string(j.Resume)
		j.Running()
		return nil
	}}}}, st2, root)
	defer stop2()
	if got := <-resumed; got != "saved" {
		t.Errorf("after the restart job kept resumed with %q, want the savepoint's checkpoint", got)
	}
	e2.waitState(t, ids["kept"], jobpb.JobState_DONE)
	e2.waitState(t, ids["lost"], jobpb.JobState_FAILED)
	if evs := strings.Join(e2.events(t, ids["lost"]), " | "); !strings.Contains(evs, "it started from a savepoint, and has no checkpoint of its own yet, but the savepoint cannot be read") {
		t.Errorf("the lost savepoint's job's events %q: want why it cannot go on", evs)
	}
}
