package jobs

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/artifacts"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// reserve counts a new preparation's bytes against the cap on prepared,
// not yet run, pipelines.
func (s *Service) reserve(n int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	max := s.opts.MaxPreparedBytes
	if max > 0 && s.mu.preparedBytes+n > max {
		return status.Errorf(codes.ResourceExhausted, "prepared jobs not yet run hold %d bytes of pipelines; %d more would pass the cap of %d (run or let them expire first)", s.mu.preparedBytes, n, max)
	}
	s.mu.preparedBytes += n
	return nil
}

func (s *Service) release(n int64) {
	s.mu.Lock()
	s.mu.preparedBytes -= n
	s.mu.Unlock()
}

func invalidArg(format string, args ...any) error {
	return status.Errorf(codes.InvalidArgument, format, args...)
}

func notFound(format string, args ...any) error {
	return status.Errorf(codes.NotFound, format, args...)
}

// Prepare validates the pipeline and opens a staging session for it.
func (s *Service) Prepare(ctx context.Context, req *jobpb.PrepareJobRequest) (*jobpb.PrepareJobResponse, error) {
	if req.GetPipeline() == nil {
		return nil, invalidArg("pipeline is required")
	}
	name := jobName(req.GetJobName(), req.GetPipelineOptions())
	if err := checkNames(name, req.GetPipeline()); err != nil {
		return nil, invalidArg("%v", err)
	}
	prepared, err := s.validate(req.GetPipeline())
	if err != nil {
		return nil, invalidArg("%v", err)
	}
	updates, err := s.updateTarget(name, req.GetPipelineOptions())
	if err == nil && updates != "" {
		err = s.checkUpdate(updates, req.GetPipeline(), req.GetPipelineOptions())
	}
	if err != nil {
		return nil, status.Errorf(codes.FailedPrecondition, "%v", err)
	}
	from, err := s.fromSavepoint(req.GetPipeline(), req.GetPipelineOptions())
	if err != nil {
		return nil, status.Errorf(codes.FailedPrecondition, "%v", err)
	}
	options, resume, fromDir := req.GetPipelineOptions(), []byte(nil), ""
	if from != nil {
		options, resume, fromDir, prepared = from.options, from.restored.Checkpoint, from.dir, from.restored.Prepared
	}
	if c, ok := s.opts.Executor.(OptionChecker); ok {
		if err := c.CheckOptions(options); err != nil {
			return nil, invalidArg("%v", err)
		}
	}
	p := &preparation{
		id:       newID(name),
		name:     name,
		pipeline: req.GetPipeline(),
		options:  options,
		created:  time.Now(),
		size:     int64(proto.Size(req.GetPipeline()) + len(resume)), // a savepoint's checkpoint is held too
		prepared: prepared,
		resume:   resume,
		from:     fromDir,
		updates:  updates,
	}
	if err := s.admit(p); err != nil {
		return nil, err
	}
	s.log.Info("job prepared", "preparation_id", p.id, "name", p.name)
	return &jobpb.PrepareJobResponse{
		PreparationId:           p.id,
		ArtifactStagingEndpoint: &pipepb.ApiServiceDescriptor{Url: s.stagingURL(ctx)},
		StagingSessionToken:     p.id,
	}, nil
}

// admit reserves a preparation's bytes, opens its staging session and
// records it.
func (s *Service) admit(p *preparation) error {
	if err := s.reserve(p.size); err != nil {
		return err
	}
	p.dir = filepath.Join(s.opts.ArtifactRoot, p.id)
	// The preparation id doubles as the staging token: both are unguessable
	// and name the same thing.
	deps := artifacts.EnvDeps(p.pipeline)
	if LoopbackOptions(p.options) {
		deps = deps.Leave(p.pipeline, runsInClient)
	}
	if err := s.opts.Staging.Register(p.id, p.dir, deps); err != nil {
		s.release(p.size)
		return status.Errorf(codes.Internal, "registering staging: %v", err)
	}
	s.mu.Lock()
	s.mu.prepared[p.id] = p
	s.updateIdleLocked()
	s.mu.Unlock()
	return nil
}

// validate calls the executor, turning a panic into an error: a pipeline
// the engine chokes on must not take down the server. It returns what a
// Planner built, for the job's Execute.
func (s *Service) validate(p *pipepb.Pipeline) (prepared any, err error) {
	defer func() {
		if r := recover(); r != nil {
			prepared, err = nil, fmt.Errorf("validating pipeline: internal error: %v", r)
		}
	}()
	if pl, ok := s.opts.Executor.(Planner); ok {
		return pl.Plan(p)
	}
	return nil, s.opts.Executor.Validate(p)
}

// Run waits for the preparation's staging to finish and starts the job.
func (s *Service) Run(ctx context.Context, req *jobpb.RunJobRequest) (*jobpb.RunJobResponse, error) {
	if req.GetPreparationId() == "" {
		return nil, invalidArg("preparation_id is required")
	}
	p, err := s.takePreparation(req.GetPreparationId())
	if err != nil {
		return nil, err
	}
	deps, err := s.opts.Staging.Wait(ctx, p.id)
	if err != nil {
		s.discard(p)
		return nil, status.Errorf(codes.FailedPrecondition, "job %q: %v", p.id, err)
	}
	if p.updates != "" {
		from, err := s.takeOver(ctx, p.updates, p.pipeline, p.options)
		if err != nil {
			s.discard(p)
			return nil, status.Errorf(codes.FailedPrecondition, "%v", err)
		}
		p.options, p.resume, p.from, p.prepared = from.options, from.restored.Checkpoint, from.dir, from.restored.Prepared
	}
	pipeline := artifacts.Apply(p.pipeline, deps)
	j := &Job{
		ID:          p.id,
		Name:        p.name,
		Pipeline:    pipeline,
		Options:     p.options,
		ArtifactDir: p.dir,
		Retrieval:   artifacts.NewRetrieval(pipeline, p.dir),
		Prepared:    p.prepared,
		Resume:      p.resume,
		Savepoint:   p.from,
		Updates:     p.updates,
	}
	s.start(j)
	return &jobpb.RunJobResponse{JobId: j.ID}, nil
}

// takePreparation removes a preparation so it runs at most once. It counts
// as running from here, so the server is not idle while staging finishes.
func (s *Service) takePreparation(id string) (*preparation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.mu.prepared[id]
	if !ok {
		return nil, notFound("no preparation with id %q (never prepared, already run, or expired)", id)
	}
	delete(s.mu.prepared, id)
	s.mu.preparedBytes -= p.size
	s.mu.running++
	return p, nil
}

// GetJobs lists every job, in id order.
func (s *Service) GetJobs(ctx context.Context, req *jobpb.GetJobsRequest) (*jobpb.GetJobsResponse, error) {
	resp := &jobpb.GetJobsResponse{}
	for _, r := range s.sortedJobs() {
		resp.JobInfo = append(resp.JobInfo, &jobpb.JobInfo{
			JobId:           r.job.ID,
			JobName:         r.job.Name,
			PipelineOptions: r.job.Options,
			State:           r.state(),
		})
	}
	return resp, nil
}

// GetState returns the job's latest state event.
func (s *Service) GetState(ctx context.Context, req *jobpb.GetJobStateRequest) (*jobpb.JobStateEvent, error) {
	r, err := s.lookup(req.GetJobId())
	if err != nil {
		return nil, err
	}
	return r.stateEvent(), nil
}

// GetPipeline returns the pipeline as run: dependencies point at staged files.
func (s *Service) GetPipeline(ctx context.Context, req *jobpb.GetJobPipelineRequest) (*jobpb.GetJobPipelineResponse, error) {
	r, err := s.lookup(req.GetJobId())
	if err != nil {
		return nil, err
	}
	return &jobpb.GetJobPipelineResponse{Pipeline: r.job.Pipeline}, nil
}

// Cancel asks the job to stop and returns at once: the job reports
// CANCELLING now and CANCELLED once Execute has returned.
func (s *Service) Cancel(ctx context.Context, req *jobpb.CancelJobRequest) (*jobpb.CancelJobResponse, error) {
	r, err := s.lookup(req.GetJobId())
	if err != nil {
		return nil, err
	}
	if r.setState(jobpb.JobState_CANCELLING) {
		s.log.Info("cancelling job", "job_id", r.job.ID)
		r.cancel()
	}
	return &jobpb.CancelJobResponse{State: r.state()}, nil
}

// Drain asks a Drainer executor to drain the job.
func (s *Service) Drain(ctx context.Context, req *jobpb.DrainJobRequest) (*jobpb.DrainJobResponse, error) {
	r, err := s.lookup(req.GetJobId())
	if err != nil {
		return nil, err
	}
	d, ok := s.opts.Executor.(Drainer)
	if !ok {
		return nil, status.Error(codes.Unimplemented, "drain is not supported by this runner's executor; use Cancel")
	}
	if !r.setState(jobpb.JobState_DRAINING) {
		return &jobpb.DrainJobResponse{State: r.state()}, nil
	}
	if err := d.Drain(r.job.ID); err != nil {
		return nil, status.Errorf(codes.Internal, "draining job %q: %v", r.job.ID, err)
	}
	return &jobpb.DrainJobResponse{State: r.state()}, nil
}

// GetStateStream replays the job's state changes, follows new ones, and ends
// after the terminal state.
func (s *Service) GetStateStream(req *jobpb.GetJobStateRequest, stream jobpb.JobService_GetStateStreamServer) error {
	r, err := s.lookup(req.GetJobId())
	if err != nil {
		return err
	}
	return r.follow(stream.Context(), func(ev *jobpb.JobMessagesResponse) error {
		if st := ev.GetStateResponse(); st != nil {
			return stream.Send(st)
		}
		return nil
	})
}

// GetMessageStream replays the job's state changes and messages in order,
// follows new ones, and ends after the terminal state.
func (s *Service) GetMessageStream(req *jobpb.JobMessagesRequest, stream jobpb.JobService_GetMessageStreamServer) error {
	r, err := s.lookup(req.GetJobId())
	if err != nil {
		return err
	}
	return r.follow(stream.Context(), stream.Send)
}

// GetJobMetrics returns the metrics the executor last set. They are final
// bundle values, so they serve as both attempted and committed; the
// runner's stage rates (rates.go) follow them.
func (s *Service) GetJobMetrics(ctx context.Context, req *jobpb.GetJobMetricsRequest) (*jobpb.GetJobMetricsResponse, error) {
	r, err := s.lookup(req.GetJobId())
	if err != nil {
		return nil, err
	}
	m := append(slices.Clone(r.currentMetrics()), rateInfos(r.job.Stats().Snapshot())...)
	return &jobpb.GetJobMetricsResponse{Metrics: &jobpb.MetricResults{Attempted: m, Committed: m}}, nil
}

// WorkersOption is the runner's job option for SDK harnesses per
// environment (read by runner/execute).
const WorkersOption = "workers_per_environment"

// PoolsOption is the runner's job option naming worker pools by SDK, in
// place of the server's --worker_pools for the SDKs it names.
const PoolsOption = "worker_pools"

// DescribePipelineOptions lists the runner's own options. Python's
// PortableRunner asks for them and then accepts them on its command line
// (--workers_per_environment=4), sending them only when given.
func (s *Service) DescribePipelineOptions(ctx context.Context, req *jobpb.DescribePipelineOptionsRequest) (*jobpb.DescribePipelineOptionsResponse, error) {
	return &jobpb.DescribePipelineOptionsResponse{Options: []*jobpb.PipelineOptionDescriptor{{
		Name: WorkersOption,
		Type: jobpb.PipelineOptionType_INTEGER,
		Description: "SDK worker processes started per environment (EXTERNAL worker pool, PROCESS, DOCKER); " +
			"default: the machine's cores",
		Group: "beam-runner",
	}, {
		Name: PoolsOption,
		Type: jobpb.PipelineOptionType_STRING,
		Description: "worker pools to run this job's SDK workers on, by SDK: SDK=HOST:PORT[/WORKERS],... " +
			"e.g. python=host1:50000/2,host2:50000/2; replaces the server's --worker_pools for the SDKs named",
		Group: "beam-runner",
	}, {
		Name: AutoscalingOption, Type: jobpb.PipelineOptionType_STRING, Group: "beam-runner",
		Description: "size each environment's SDK workers while the job runs: none, or ds2 (default: the server's --autoscaling)",
	}, {
		Name: MinWorkersOption, Type: jobpb.PipelineOptionType_INTEGER, Group: "beam-runner",
		Description: "with autoscaling, the least SDK workers per environment (default 1)",
	}, {
		Name: MaxWorkersOption, Type: jobpb.PipelineOptionType_INTEGER, Group: "beam-runner",
		Description: "with autoscaling, the most SDK workers per environment (default: workers_per_environment, else the machine's cores)",
	}, {
		Name: AutoscalingIntervalOption, Type: jobpb.PipelineOptionType_STRING, Group: "beam-runner",
		Description: "with autoscaling, time between two scaling decisions, e.g. 10s",
	}, {
		Name: ScaleDownIntervalOption, Type: jobpb.PipelineOptionType_STRING, Group: "beam-runner",
		Description: "with autoscaling, least time between a change and a scale-down, e.g. 5m",
	}, {
		Name: StreamBundleTimeOption, Type: jobpb.PipelineOptionType_STRING, Group: "beam-runner",
		Description: "streaming: how long a source's bundle runs before the runner checkpoints it (its records count downstream when it commits), e.g. 500ms; default 1s",
	}, {
		Name: ScaleDownWindowOption, Type: jobpb.PipelineOptionType_STRING, Group: "beam-runner",
		Description: "with autoscaling, a scale-down goes no lower than the highest need measured within this time, e.g. 1m",
	}}}, nil
}
