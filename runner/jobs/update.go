package jobs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/savepoint"
	"google.golang.org/protobuf/types/known/structpb"
)

// jobName is the name of a job submitted as name with options opts:
// its --job_name when given, else name. Python's portable runner
// prepares every job as "job" and sends the name the user gave only as
// the option (Dataflow's), by which --update finds the job; Go's sends
// the option's value as both.
func jobName(name string, opts *structpb.Struct) string {
	if v, ok := Option(opts, JobNameOption); ok && v.GetStringValue() != "" {
		return v.GetStringValue()
	}
	return name
}

// updateTarget is the running job a pipeline submitted with --update
// replaces: the one RUNNING job of its name (jobName). "" if no update
// is asked.
func (s *Service) updateTarget(name string, opts *structpb.Struct) (string, error) {
	if !boolOption(opts, UpdateOption) {
		return "", nil
	}
	if _, ok := Option(opts, FromSavepointOption); ok {
		return "", fmt.Errorf("options %s and %s: give one (an update starts from the running job's savepoint)", UpdateOption, FromSavepointOption)
	}
	var ids []string
	for _, r := range s.sortedJobs() {
		if r.job.Name == name && r.state() == jobpb.JobState_RUNNING {
			ids = append(ids, r.job.ID)
		}
	}
	switch len(ids) {
	case 0:
		return "", fmt.Errorf("option %s: no RUNNING job is named %q", UpdateOption, name)
	case 1:
		return ids[0], nil
	}
	return "", fmt.Errorf("option %s: %d RUNNING jobs are named %q (%v): cancel all but one", UpdateOption, len(ids), name, ids)
}

// checkUpdate refuses, before anything stops, pipeline p as a
// replacement of running job id: its steps must hold the job's state,
// and its plan whatever the job's stages might hold.
func (s *Service) checkUpdate(id string, p *pipepb.Pipeline, opts *structpb.Struct) error {
	r, err := s.lookup(id)
	if err != nil {
		return err
	}
	sv, ok := s.opts.Executor.(Savepointer)
	if !ok {
		return fmt.Errorf("option %s: this runner's executor cannot update jobs", UpdateOption)
	}
	ro, err := restoreOptions(opts)
	if err != nil {
		return err
	}
	old, err := savepoint.Steps(r.job.Pipeline)
	if err != nil {
		return err
	}
	now, err := savepoint.Steps(p)
	if err != nil {
		return err
	}
	if err := savepoint.CheckDropping(old, now, ro.Mapping, ro.AllowDropped); err != nil {
		return fmt.Errorf("the pipeline cannot update job %s; it goes on running:\n%w", id, err)
	}
	if err := sv.CheckUpdate(r.job.Pipeline, StartStages(r.job.Options), p, opts, ro); err != nil {
		return fmt.Errorf("the pipeline cannot update job %s; it goes on running: %w", id, err)
	}
	return nil
}

// takeOver stops job id at a savepoint (cancel --savepoint) and plans
// p to start from it; the savepoint's directory goes into the new
// job's options (FromSavepointOption) so that a restart before its
// first checkpoint starts from there too.
func (s *Service) takeOver(ctx context.Context, id string, p *pipepb.Pipeline, opts *structpb.Struct) (*startFrom, error) {
	dir := ""
	if s.opts.Store == nil {
		base := filepath.Join(os.TempDir(), "beam-runner-savepoints")
		dir = filepath.Join(base, fmt.Sprintf("%s-%s", id, time.Now().UTC().Format("20060102T150405.000Z")))
	}
	res, err := s.Savepoint(ctx, id, dir, ThenCancel)
	if err != nil {
		return nil, fmt.Errorf("updating job %s: %w", id, err)
	}
	with := withOption(opts, FromSavepointOption, structpb.NewStringValue(res.Dir))
	from, err := s.restoreFrom(res.Dir, p, with)
	if err != nil {
		return nil, fmt.Errorf("job %s stopped at savepoint %s, but the new pipeline cannot start from it (start the old pipeline with --%s=%s): %w", id, res.Dir, FromSavepointOption, res.Dir, err)
	}
	return from, nil
}
