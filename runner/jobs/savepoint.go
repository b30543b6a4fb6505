package jobs

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/savepoint"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
)

// FromSavepointOption is the pipeline option naming the savepoint
// directory a new job starts from.
const FromSavepointOption = "from_savepoint"

// Taken is a consistent checkpoint of a running job, taken for a
// savepoint: the executor's checkpoint bytes (what Job.Resume holds),
// the count of checkpoints its run took, this one included, and the
// executor's description of the plan they belong to.
type Taken struct {
	Checkpoint []byte
	Sequence   uint64
	Shape      []string
}

// Savepointer is an optional Executor capability, found by type
// assertion: savepoints of running jobs, and starting new ones from them.
type Savepointer interface {
	// Savepoint takes a consistent checkpoint of running job jobID and
	// hands it to write, at that point of the job: with stop, a job
	// whose write succeeded commits nothing more, and the caller cancels
	// it.
	Savepoint(ctx context.Context, jobID string, stop bool, write func(Taken) error) error
	// Restore plans pipeline p (with options opts) to start from
	// savepoint sp as o says, refusing what would lose or misread saved
	// data and a checkpoint in sp the executor cannot read: at
	// submission, not when the job starts. Pure apart from its reading.
	Restore(sp *savepoint.Savepoint, p *pipepb.Pipeline, opts *structpb.Struct, o RestoreOptions) (Restored, error)
	// CheckUpdate refuses pipeline p as an update of a running job of
	// pipeline old (planned with oldStarts, StartStageOption) that would
	// lose or misread what the job's stages may hold, before the job
	// stops: it assumes every stage holds all it can.
	CheckUpdate(old *pipepb.Pipeline, oldStarts []string, p *pipepb.Pipeline, opts *structpb.Struct, o RestoreOptions) error
}

// Restored is a pipeline planned to start from a savepoint: the
// checkpoint it restores (the savepoint's, remapped onto its plan), the
// plan (what a Planner's Plan returns), and the transforms that plan
// was made to start stages with (StartStageOption).
type Restored struct {
	Checkpoint []byte
	Prepared   any
	StartStage []string
}

// Then says what a savepoint request does once the savepoint is written.
type Then string

const (
	KeepRunning Then = ""
	ThenCancel  Then = "cancel"
	ThenDrain   Then = "drain"
)

// trigger names a savepoint taken before then, for the checkpoint history.
func (then Then) trigger() string {
	switch then {
	case ThenCancel:
		return TriggerCancel
	case ThenDrain:
		return TriggerDrain
	}
	return TriggerSavepoint
}

// SavepointResult says where a savepoint went and the job's state after.
type SavepointResult struct {
	Dir      string
	Sequence uint64
	State    jobpb.JobState_Enum
}

// Savepoint writes a savepoint of running job jobID to dir (if empty,
// a new directory under the state dir's "savepoints"), then cancels or
// drains the job if then says so. A cancel stops the job at the
// savepoint: what the job did after it is not committed, and a job
// started from the savepoint does it once.
func (s *Service) Savepoint(ctx context.Context, jobID, dir string, then Then) (*SavepointResult, error) {
	r, err := s.lookup(jobID)
	if err != nil {
		return nil, err
	}
	sv, ok := s.opts.Executor.(Savepointer)
	if !ok {
		return nil, status.Error(codes.Unimplemented, "savepoints are not supported by this runner's executor")
	}
	if st := r.state(); st != jobpb.JobState_RUNNING {
		return nil, status.Errorf(codes.FailedPrecondition, "job %s is %v: only a RUNNING job can write a savepoint", jobID, st)
	}
	if dir, err = s.savepointDir(jobID, dir); err != nil {
		return nil, err
	}
	var seq uint64
	ev, start := CheckpointEvent{Trigger: then.trigger(), Dir: dir}, time.Now()
	err = sv.Savepoint(ctx, jobID, then == ThenCancel, func(t Taken) error {
		sp, err := savepoint.New(r.job.ID, r.job.Name, r.job.Pipeline, t.Checkpoint, t.Sequence, t.Shape, time.Now())
		if err == nil {
			sp.Manifest.StartStage = StartStages(r.job.Options)
			err = savepoint.Write(dir, sp)
		}
		seq, ev.Bytes, ev.Sequence = t.Sequence, int64(len(t.Checkpoint)), t.Sequence
		return err
	})
	// The duration counts the wait for the driver's consistent point.
	ev.At, ev.DurationMs = time.Now().UnixMilli(), time.Since(start).Milliseconds()
	if err != nil {
		ev.Error = err.Error()
	}
	r.job.Stats().AddCheckpoint(ev)
	if err != nil {
		return nil, status.Errorf(codes.FailedPrecondition, "job %s: savepoint not written: %v", jobID, err)
	}
	s.log.Info("savepoint written", "job_id", jobID, "dir", dir, "sequence", seq)
	r.message(jobpb.JobMessage_JOB_MESSAGE_BASIC, fmt.Sprintf("savepoint %d written to %s", seq, dir))
	return &SavepointResult{Dir: dir, Sequence: seq, State: s.afterSavepoint(ctx, r, then)}, nil
}

// afterSavepoint cancels or drains the job as then says; it returns the
// job's state.
func (s *Service) afterSavepoint(ctx context.Context, r *record, then Then) jobpb.JobState_Enum {
	switch then {
	case ThenCancel:
		if r.setState(jobpb.JobState_CANCELLING) {
			s.log.Info("cancelling job after its savepoint", "job_id", r.job.ID)
		}
		r.cancel() // always: the job waits for it at the savepoint
	case ThenDrain:
		if _, err := s.Drain(ctx, &jobpb.DrainJobRequest{JobId: r.job.ID}); err != nil {
			r.message(jobpb.JobMessage_JOB_MESSAGE_WARNING, fmt.Sprintf("drain after the savepoint: %v", err))
		}
	}
	return r.state()
}

// savepointDir is where a savepoint asked for with dir goes: dir if
// given (a path on the server's machine), else a new directory under
// the server's state dir.
func (s *Service) savepointDir(jobID, dir string) (string, error) {
	if dir != "" {
		if !filepath.IsAbs(dir) {
			return "", invalidArg("savepoint directory %q: give an absolute path (it is a path on the server's machine)", dir)
		}
		return filepath.Clean(dir), nil
	}
	if s.opts.Store == nil {
		return "", invalidArg("this server keeps no --state_dir: name the savepoint's directory")
	}
	name := fmt.Sprintf("%s-%s", jobID, time.Now().UTC().Format("20060102T150405.000Z"))
	return filepath.Join(s.opts.Store.Dir(), "savepoints", name), nil
}

// fromSavepoint reads the savepoint a new pipeline asks to start from
// (FromSavepointOption), and refuses it if the pipeline cannot hold its
// state; it returns what the job starts from, nil if no savepoint is
// asked.
func (s *Service) fromSavepoint(p *pipepb.Pipeline, opts *structpb.Struct) (*startFrom, error) {
	v, ok := Option(opts, FromSavepointOption)
	if !ok {
		return nil, nil
	}
	dir := v.GetStringValue()
	if dir == "" {
		return nil, fmt.Errorf("option %s: want a savepoint directory, got %v", FromSavepointOption, v.AsInterface())
	}
	return s.restoreFrom(dir, p, opts)
}

// startFrom is what a job started from a savepoint starts with.
type startFrom struct {
	dir      string
	restored Restored
	options  *structpb.Struct // the job's, with StartStageOption
}

// restoreFrom checks pipeline p against the savepoint in dir and plans
// it to start from there.
func (s *Service) restoreFrom(dir string, p *pipepb.Pipeline, opts *structpb.Struct) (*startFrom, error) {
	sv, ok := s.opts.Executor.(Savepointer)
	if !ok {
		return nil, fmt.Errorf("option %s: this runner's executor cannot start jobs from savepoints", FromSavepointOption)
	}
	ro, err := restoreOptions(opts)
	if err != nil {
		return nil, err
	}
	sp, err := savepoint.Read(dir)
	if err != nil {
		return nil, fmt.Errorf("option %s: %w", FromSavepointOption, err)
	}
	steps, err := savepoint.Steps(p)
	if err != nil {
		return nil, err
	}
	if err := savepoint.CheckDropping(sp.Manifest.Steps, steps, ro.Mapping, ro.AllowDropped); err != nil {
		return nil, fmt.Errorf("the pipeline cannot start from savepoint %s:\n%w", dir, err)
	}
	rs, err := sv.Restore(sp, p, opts, ro)
	if err != nil {
		return nil, fmt.Errorf("the pipeline cannot start from savepoint %s: %w", dir, err)
	}
	return &startFrom{dir: dir, restored: rs, options: withStartStages(opts, rs.StartStage)}, nil
}

// savepointCheckpoint is the checkpoint of the savepoint job j started
// from, remapped onto its plan, for a restart before the job's first
// checkpoint of its own (it must not start from the beginning), or why
// it cannot be had.
func (s *Service) savepointCheckpoint(j *Job) ([]byte, string) {
	v, ok := Option(j.Options, FromSavepointOption)
	if !ok {
		return nil, ""
	}
	from, err := s.restoreFrom(v.GetStringValue(), j.Pipeline, j.Options)
	if err != nil {
		return nil, fmt.Sprintf("it started from a savepoint, and has no checkpoint of its own yet, but the savepoint cannot be read: %v", err)
	}
	return from.restored.Checkpoint, ""
}
