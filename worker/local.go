package worker

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/worker/sdkenv"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
)

// Artifact role and type URNs the local boot reads.
const (
	roleStagingTo   = "beam:artifact:role:staging_to:v1"
	roleGoWorker    = "beam:artifact:role:go_worker_binary:v1"
	rolePipReqsFile = "beam:artifact:role:pip_requirements_file:v1"
)

// localEnv is an environment prepared to run as local SDK worker
// processes: what a Beam SDK container's boot would set up once, shared by
// the environment's workers and their restarts.
type localEnv struct {
	envID string
	sdk   sdkenv.SDK
	rt    runtime
	dir   string   // the semi-persistent directory; staged files in dir/staged
	prog  string   // the interpreter, the Go worker binary or java
	args  []string // java's command line
	env   []string
	about string // for the job's message: what runs
}

// runtime is one SDK's way of running its workers here, as its
// container's boot would; each SDK's file registers one.
type runtime interface {
	// prepare sets le's prog, args, env and about, once for an
	// environment, from its files staged in le.dir/staged.
	prepare(ctx context.Context, le *localEnv, img sdkenv.Image, files []stagedFile) error
	// command is one worker's command and the variables it adds to le.env.
	command(le *localEnv, workerID string, ep Endpoints) (*exec.Cmd, []string)
}

// runtimeSpec is an SDK's registered runtime.
type runtimeSpec struct {
	new func(Config, Job) runtime
	// process: a PROCESS environment of the SDK with no command, or whose
	// container boot is not here, runs the SDK here instead.
	process bool
}

var runtimes = map[sdkenv.SDK]runtimeSpec{}

// registerRuntime adds an SDK's runtime; call it from init.
func registerRuntime(sdk sdkenv.SDK, r runtimeSpec) { runtimes[sdk] = r }

// preparing is one environment's preparation, which the environment's
// other workers wait for while other environments prepare beside it.
type preparing struct {
	done chan struct{}
	le   *localEnv // set before done is closed
	err  error
}

// local prepares (once per job and environment) img's SDK to run here,
// its workers getting vars besides the boot's environment. Environments
// prepare side by side: a pip install or a Maven fetch for one does not
// hold up another.
func (l *Launcher) local(ctx context.Context, envID string, e sdkenv.Env, img sdkenv.Image, what, why string, vars ...string) (*localEnv, error) {
	l.mu.Lock()
	p := l.prepared[envID]
	first := p == nil
	if first {
		p = &preparing{done: make(chan struct{})}
		l.prepared[envID] = p
	}
	l.mu.Unlock()
	if first {
		p.le, p.err = l.prepareLocal(ctx, envID, e, img, what, why, vars)
		if p.err != nil {
			l.mu.Lock()
			delete(l.prepared, envID) // a later start tries again
			l.mu.Unlock()
		}
		close(p.done)
	}
	select {
	case <-p.done:
		return p.le, p.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (l *Launcher) prepareLocal(ctx context.Context, envID string, e sdkenv.Env, img sdkenv.Image, what, why string, vars []string) (*localEnv, error) {
	le, err := l.prepare(ctx, envID, e, img)
	if err != nil {
		return nil, fmt.Errorf("%s as local SDK workers: %w", what, err)
	}
	le.env = append(le.env, vars...)
	l.job.Warn(fmt.Sprintf("environment %q: %s runs as local SDK worker processes (%s): %s", envID, what, why, le.about))
	return le, nil
}

func (l *Launcher) prepare(ctx context.Context, envID string, e sdkenv.Env, img sdkenv.Image) (*localEnv, error) {
	rt := l.runtimes[img.SDK]
	if rt == nil {
		return nil, fmt.Errorf("beam-runner cannot run %s SDK workers here", img.SDK)
	}
	if l.job.WorkDir == "" {
		return nil, fmt.Errorf("the runner gave the job no work directory")
	}
	dir, err := os.MkdirTemp(l.job.WorkDir, "env-")
	if err != nil {
		return nil, err
	}
	files, err := l.materialize(e.Proto.GetDependencies(), filepath.Join(dir, "staged"))
	if err != nil {
		return nil, err
	}
	opts, err := l.writeOptions(dir)
	if err != nil {
		return nil, err
	}
	le := &localEnv{envID: envID, sdk: img.SDK, rt: rt, dir: dir,
		env: []string{"SEMI_PERSISTENT_DIRECTORY=" + dir, "PIPELINE_OPTIONS_FILE=" + opts, "JOB_ID=" + l.job.ID, "JOB_NAME=" + l.job.Name}}
	return le, rt.prepare(ctx, le, img, files)
}

// writeOptions writes the job's options where the SDK reads them
// (PIPELINE_OPTIONS_FILE), as the boot does: a command line could be too
// long for them.
func (l *Launcher) writeOptions(dir string) (string, error) {
	b, err := protojson.Marshal(l.job.Options)
	if err != nil {
		return "", fmt.Errorf("pipeline options: %w", err)
	}
	path := filepath.Join(dir, "pipeline_options.json")
	return path, os.WriteFile(path, b, 0o600)
}

// stagedFile is one dependency written into an environment's staged dir.
type stagedFile struct {
	name, role, path string
}

// materialize writes deps into dir under the names the SDK expects (the
// staging_to role's name, else the file's base name).
func (l *Launcher) materialize(deps []*pipepb.ArtifactInformation, dir string) ([]stagedFile, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var out []stagedFile
	seen := map[string]bool{}
	for i, dep := range deps {
		name, err := stagedName(dep, i)
		if err != nil {
			return nil, err
		}
		if seen[name] {
			return nil, fmt.Errorf("two artifacts are staged as %q", name)
		}
		seen[name] = true
		path := filepath.Join(dir, name)
		if err := l.copyArtifact(dep, path); err != nil {
			return nil, fmt.Errorf("artifact %q: %w", name, err)
		}
		out = append(out, stagedFile{name: name, role: dep.GetRoleUrn(), path: path})
	}
	return out, nil
}

func (l *Launcher) copyArtifact(dep *pipepb.ArtifactInformation, path string) error {
	if l.job.Artifacts == nil {
		return fmt.Errorf("the job has no staged artifacts")
	}
	src, err := l.job.Artifacts.Open(dep)
	if err != nil {
		return err
	}
	defer src.Close()
	return writeFile(path, 0o644, src)
}

// writeFile writes what src holds to a new file at path.
func writeFile(path string, mode os.FileMode, src io.Reader) error {
	dst, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

// stagedName is the file name a dependency is staged under; names that
// would leave the staged directory are refused.
func stagedName(dep *pipepb.ArtifactInformation, i int) (string, error) {
	name := ""
	if dep.GetRoleUrn() == roleStagingTo {
		var pl pipepb.ArtifactStagingToRolePayload
		if err := proto.Unmarshal(dep.GetRolePayload(), &pl); err != nil {
			return "", fmt.Errorf("artifact %d: bad staging_to payload: %w", i, err)
		}
		name = pl.GetStagedName()
	}
	if name == "" && dep.GetTypeUrn() == "beam:artifact:type:file:v1" {
		var pl pipepb.ArtifactFilePayload
		if proto.Unmarshal(dep.GetTypePayload(), &pl) == nil {
			name = filepath.Base(pl.GetPath())
		}
	}
	if name == "" {
		name = fmt.Sprintf("artifact-%d", i)
	}
	if name == "." || name == ".." || strings.ContainsAny(name, `/\`) || strings.ContainsRune(name, 0) {
		return "", fmt.Errorf("artifact %d: staged name %q is not a plain file name", i, name)
	}
	return name, nil
}

// start runs one worker of the environment. It runs in the server's
// working directory, so that the job's relative paths mean what they
// mean to the user who started the server; what the worker keeps for
// itself goes to its semi-persistent directory.
func (le *localEnv) start(workerID string, ep Endpoints) (Handle, error) {
	cmd, vars := le.rt.command(le, workerID, ep)
	cmd.Env = append(append(os.Environ(), le.env...), vars...)
	p, err := runCmd(cmd, fmt.Sprintf("environment %q (local %s SDK worker)", le.envID, le.sdk))
	if err != nil {
		return nil, err
	}
	return p, nil
}

// bootEnv is what the boot of the Go and Python SDK containers hands
// their workers: the worker's id and the endpoints as descriptors.
func bootEnv(workerID string, ep Endpoints) []string {
	return []string{"WORKER_ID=" + workerID,
		"LOGGING_API_SERVICE_DESCRIPTOR=" + descriptor(ep.Logging),
		"CONTROL_API_SERVICE_DESCRIPTOR=" + descriptor(ep.Control)}
}

// descriptor is an ApiServiceDescriptor in the text format the Python
// SDK parses from its environment.
func descriptor(url string) string {
	return prototext.Format(&pipepb.ApiServiceDescriptor{Url: url})
}
