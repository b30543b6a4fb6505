// Package jobs implements the Beam Job API (JobService) and artifact staging
// front end. It owns job lifecycle bookkeeping; running a pipeline is
// delegated to an Executor.
package jobs

import (
	"context"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/types/known/structpb"
)

// Executor runs pipelines. The job service calls Validate during Prepare and
// Execute once per job after Run.
type Executor interface {
	// Validate rejects a pipeline the executor cannot run. The error text is
	// returned to the client, so it must name the transform and URN at fault.
	Validate(p *pipepb.Pipeline) error
	// Execute runs the job to completion. ctx is cancelled when the job is
	// cancelled or the server shuts down. A nil return means DONE; returning
	// after ctx was cancelled means CANCELLED; any other error means FAILED,
	// and its text becomes the job's final error message.
	Execute(ctx context.Context, j *Job) error
}

// OptionChecker is an optional Executor capability, found by type
// assertion: CheckOptions judges a job's pipeline options at Prepare, so
// that a bad value of the runner's own options is refused there, naming
// the option, instead of failing the job when it starts.
type OptionChecker interface {
	CheckOptions(opts *structpb.Struct) error
}

// Planner is an optional Executor capability, found by type assertion:
// Plan validates a pipeline as Validate does and returns what it built
// doing so, which the service keeps and hands to Execute as
// Job.Prepared, so that the work is done once per job.
type Planner interface {
	Plan(p *pipepb.Pipeline) (any, error)
}

// Job is one submitted pipeline, as the executor sees it. The exported
// fields are fixed before Execute is called; the methods are safe for
// concurrent use.
type Job struct {
	ID       string
	Name     string
	Pipeline *pipepb.Pipeline // environments' dependencies point at staged files
	Options  *structpb.Struct // the pipeline options from Prepare
	// ArtifactDir holds this job's staged artifacts; removed when the job ends.
	ArtifactDir string
	// Retrieval serves the staged artifacts to this job's SDK harnesses.
	Retrieval jobpb.ArtifactRetrievalServiceServer
	// Resume is the last checkpoint (see Checkpoint) of a job that runs
	// again after a server restart; nil for a first run, or a job resumed
	// before its first checkpoint, which runs from the beginning.
	Resume []byte
	// Savepoint is the savepoint directory Resume was read from, for a
	// new job started from one (FromSavepointOption); "" otherwise.
	Savepoint string
	// Updates is the job this one replaced (--update), from Savepoint;
	// "" otherwise.
	Updates string
	// Prepared is what the executor's Plan returned at Prepare (see
	// Planner); nil if it has none, as for a job resumed after a restart.
	Prepared any

	sink  eventSink
	stats *Stats // set by the service; see Stats
}

// Resumer is an optional Executor capability: run jobs again after a
// server restart (see Job.Resume). Found by type assertion.
type Resumer interface {
	// Resumable returns why j's workers cannot be started again, or nil.
	Resumable(j *Job) error
}

// Stats returns the live statistics the executor should update. A Job the
// service did not create gets statistics nobody reads.
func (j *Job) Stats() *Stats {
	if j.stats == nil {
		j.stats = NewStats()
	}
	return j.stats
}

// eventSink is how a Job reports to the service; set by the service.
type eventSink interface {
	message(importance jobpb.JobMessage_MessageImportance, text string)
	running()
	metrics(infos []*pipepb.MonitoringInfo)
	checkpoint(data []byte) (bool, error)
}

// Message appends a job message visible through GetMessageStream.
func (j *Job) Message(importance jobpb.JobMessage_MessageImportance, text string) {
	if j.sink != nil {
		j.sink.message(importance, text)
	}
}

// Running moves the job from STARTING to RUNNING once its workers are up.
func (j *Job) Running() {
	if j.sink != nil {
		j.sink.running()
	}
}

// SetMetrics replaces the job's current metrics (already aggregated across
// bundles by the executor) returned by GetJobMetrics.
func (j *Job) SetMetrics(infos []*pipepb.MonitoringInfo) {
	if j.sink != nil {
		j.sink.metrics(infos)
	}
}

// Durable reports whether the job's record outlives the server, so that
// checkpoints (see Checkpoint) are worth taking.
func (j *Job) Durable() bool {
	r, ok := j.sink.(*record)
	return ok && r.journal != nil
}

// Checkpoint replaces the job's saved checkpoint with data, atomically
// and synced to disk; after a restart the job runs again with it as
// Resume. A job whose record is not durable keeps nothing.
func (j *Job) Checkpoint(data []byte) error {
	if j.sink == nil {
		return nil
	}
	_, err := j.sink.checkpoint(data)
	return err
}
