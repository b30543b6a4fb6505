package workers

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sync"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/jobs"
	"github.com/beam-runner/beam-runner/worker"
	"google.golang.org/protobuf/proto"
)

// NewLauncher gives a job the launcher of its environments, with a work
// directory for local SDK workers that cleanup removes.
func NewLauncher(cfg worker.Config, log *slog.Logger, j *jobs.Job) (*worker.Launcher, func(), error) {
	dir, err := os.MkdirTemp("", "beam-runner-"+j.ID+"-")
	if err != nil {
		return nil, nil, fmt.Errorf("work directory for the job's workers: %w", err)
	}
	opener, _ := j.Retrieval.(worker.Opener)
	log = log.With("job", j.ID)
	l := worker.NewLauncher(cfg, worker.Job{
		ID: j.ID, Name: j.Name, Options: j.Options, Artifacts: opener, WorkDir: dir,
		Warn: func(msg string) {
			log.Warn(msg)
			j.Message(jobpb.JobMessage_JOB_MESSAGE_WARNING, msg)
		},
	})
	return l, func() { os.RemoveAll(dir) }, nil
}

// ResolveEnvironments returns p with each anyof environment replaced by
// the alternative the launcher picks, saying which in the job's messages;
// p itself (the job's record) is left as submitted.
func ResolveEnvironments(ctx context.Context, l *worker.Launcher, j *jobs.Job, p *pipepb.Pipeline) (*pipepb.Pipeline, error) {
	envs := p.GetComponents().GetEnvironments()
	var out *pipepb.Pipeline
	for _, id := range slices.Sorted(maps.Keys(envs)) {
		if envs[id].GetUrn() != worker.URNAnyOf {
			continue
		}
		chosen, note, err := l.Resolve(ctx, id, envs[id])
		if err != nil {
			return nil, err
		}
		if out == nil {
			out = proto.Clone(p).(*pipepb.Pipeline)
		}
		out.GetComponents().GetEnvironments()[id] = chosen
		j.Message(jobpb.JobMessage_JOB_MESSAGE_BASIC, note)
	}
	if out == nil {
		return p, nil
	}
	return out, nil
}

// Restartable says which environment of p, if any, the runner could not
// start again after a restart.
func Restartable(p *pipepb.Pipeline) error {
	for id, env := range p.GetComponents().GetEnvironments() {
		if urn := env.GetUrn(); urn != "" && !worker.Supported(urn) {
			return fmt.Errorf("the runner cannot start its environment %q (%s) again", id, urn)
		}
	}
	return nil
}

// workerEnvs maps worker ids to their environments; provision requests
// read it from gRPC goroutines while the driver adds workers.
type workerEnvs struct {
	mu sync.Mutex
	m  map[string]string
}

func (w *workerEnvs) set(worker, env string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[string]string{}
	}
	w.m[worker] = env
}

func (w *workerEnvs) get(worker string) (string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	env, ok := w.m[worker]
	return env, ok
}
