package worker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
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
	// Python is the interpreter of local Python SDK workers; "" looks for
	// python3.X (the image's version), then python3, on PATH.
	Python string
	// CacheDir keeps the virtualenvs built for jobs' requirements; "" is
	// $XDG_CACHE_HOME/beam-runner/venvs.
	CacheDir string
	// Java is the java of local Java SDK workers (a binary or a Java
	// home); "" looks in JAVA_HOME, PATH and JVMDir for the image's Java.
	Java string
	// JavaClasspath is a directory of jars that take the place of Beam's
	// Java harness and the jars beside it; "" finds them (javaHarness).
	JavaClasspath string
	// JavaCacheDir keeps Java harnesses fetched with Maven; "" is
	// $XDG_CACHE_HOME/beam-runner/java.
	JavaCacheDir string
	// MavenRepo is the local Maven repository; "" is ~/.m2/repository.
	MavenRepo string
	// Maven is the mvn that fetches harnesses; "" is mvn on PATH.
	Maven string
	// JVMDir holds Java homes to look in; "" is /usr/lib/jvm.
	JVMDir string
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
	cfg Config
	job Job

	mu       sync.Mutex
	prepared map[string]*localEnv // by environment id
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
	return &Launcher{cfg: cfg, job: job, prepared: map[string]*localEnv{}}
}

// Start launches a harness for environment envID that connects as
// workerID. env must not be anyof: Resolve picks its alternative first.
func (l *Launcher) Start(ctx context.Context, envID string, env *pipepb.Environment, workerID string, ep Endpoints) (Handle, error) {
	switch env.GetUrn() {
	case URNExternal:
		return startExternal(ctx, env, workerID, ep)
	case URNProcess:
		if local, ok, err := l.localProcess(ctx, envID, env); ok || err != nil {
			if err != nil {
				return nil, err
			}
			return local.start(workerID, ep)
		}
		return startProcess(env, workerID, ep)
	case URNDocker:
		local, err := l.dockerOrLocal(ctx, envID, env)
		if err != nil || local == nil {
			if err != nil {
				return nil, err
			}
			return startDocker(env, workerID, ep)
		}
		return local.start(workerID, ep)
	case URNAnyOf:
		return nil, fmt.Errorf("environment %q is anyof: the runner must pick one of its alternatives before starting it", envID)
	default:
		return nil, fmt.Errorf("environment urn %q is not supported (supported: %s, %s, %s, %s)", env.GetUrn(), URNExternal, URNProcess, URNDocker, URNAnyOf)
	}
}
