package worker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/worker/sdkenv"
	"google.golang.org/protobuf/types/known/structpb"
)

// ContainerMode says how DOCKER environments of Beam's own SDK images run.
type ContainerMode string

const (
	// ContainersAuto runs Beam's SDK images in Docker when a Docker daemon
	// answers, else as local SDK worker processes.
	ContainersAuto ContainerMode = "auto"
	// ContainersLocal always runs Beam's SDK images as local processes.
	ContainersLocal ContainerMode = "local"
	// ContainersDocker always runs images in Docker.
	ContainersDocker ContainerMode = "docker"
)

// ParseContainerMode reads the --sdk_containers flag.
func ParseContainerMode(s string) (ContainerMode, error) {
	switch m := ContainerMode(s); m {
	case ContainersAuto, ContainersLocal, ContainersDocker:
		return m, nil
	case "":
		return ContainersAuto, nil
	}
	return "", fmt.Errorf("--sdk_containers: want auto, local or docker, got %q", s)
}

// Config is how a server starts environments, shared by its jobs.
type Config struct {
	Containers ContainerMode
	Python     PythonConfig // local Python SDK workers
	Java       JavaConfig   // local Java SDK workers
	// Docker reports whether a Docker daemon answers; nil asks the docker
	// client (cached for a while).
	Docker func(context.Context) error
	Logger *slog.Logger
}

// Opener opens one of a job's staged artifacts.
type Opener interface {
	Open(a *pipepb.ArtifactInformation) (io.ReadCloser, error)
}

// Job is what a launcher needs of the job whose workers it starts.
type Job struct {
	ID, Name  string
	Options   *structpb.Struct
	Artifacts Opener // nil: the job staged nothing the runner can open
	// WorkDir holds what local workers need (staged files, options);
	// the caller removes it when the job ends.
	WorkDir string
	// Warn puts a warning in the job's messages.
	Warn func(string)
}

// Launcher starts the SDK harnesses of one job's environments.
type Launcher struct {
	cfg      Config
	job      Job
	runtimes map[sdkenv.SDK]runtime // each SDK's local runtime

	mu       sync.Mutex
	prepared map[string]*preparing // by environment id
}

// NewLauncher returns a launcher for job.
func NewLauncher(cfg Config, job Job) *Launcher {
	if cfg.Containers == "" {
		cfg.Containers = ContainersAuto
	}
	if cfg.Docker == nil {
		cfg.Docker = dockerAnswers
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if job.Warn == nil {
		job.Warn = func(string) {}
	}
	l := &Launcher{cfg: cfg, job: job, runtimes: map[sdkenv.SDK]runtime{}, prepared: map[string]*preparing{}}
	for sdk, r := range runtimes {
		l.runtimes[sdk] = r.new(cfg, job)
	}
	return l
}

// Start launches a harness for environment envID that connects as
// workerID. env must not be anyof: Resolve picks its alternative first.
func (l *Launcher) Start(ctx context.Context, envID string, env *pipepb.Environment, workerID string, ep Endpoints) (Handle, error) {
	e, err := sdkenv.Parse(env)
	if err != nil {
		return nil, err
	}
	var local *localEnv
	switch e.Kind {
	case sdkenv.External:
		return startExternal(ctx, e, workerID, ep)
	case sdkenv.Process:
		if local, err = l.localProcess(ctx, envID, e); err == nil && local == nil {
			return startProcess(e, workerID, ep)
		}
	case sdkenv.Docker:
		if local, err = l.dockerOrLocal(ctx, envID, e); err == nil && local == nil {
			return startDocker(e, workerID, ep)
		}
	case sdkenv.AnyOf:
		return nil, fmt.Errorf("environment %q is anyof: the runner must pick one of its alternatives before starting it", envID)
	default:
		return nil, fmt.Errorf("environment urn %q is not supported (supported: %s, %s, %s, %s)", env.GetUrn(), URNExternal, URNProcess, URNDocker, URNAnyOf)
	}
	if err != nil {
		return nil, err
	}
	return local.start(workerID, ep)
}
