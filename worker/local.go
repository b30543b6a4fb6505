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
	lang  string   // "python", "go" or "java"
	dir   string   // the semi-persistent directory; staged files in dir/staged
	prog  string   // the interpreter, the Go worker binary or java
	args  []string // java's command line
	env   []string
	about string // for the job's message: what runs
}

// local prepares (once per job and environment) img's SDK to run here,
// its workers getting vars besides the boot's environment.
func (l *Launcher) local(ctx context.Context, envID string, env *pipepb.Environment, img SDKImage, what, why string, vars ...string) (*localEnv, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if le := l.prepared[envID]; le != nil {
		return le, nil
	}
	le, err := l.prepare(ctx, envID, env, img)
	if err != nil {
		return nil, fmt.Errorf("%s as local SDK workers: %w", what, err)
	}
	le.env = append(le.env, vars...)
	l.job.Warn(fmt.Sprintf("environment %q: %s runs as local SDK worker processes (%s): %s", envID, what, why, le.about))
	l.prepared[envID] = le
	return le, nil
}

func (l *Launcher) prepare(ctx context.Context, envID string, env *pipepb.Environment, img SDKImage) (*localEnv, error) {
	if l.job.WorkDir == "" {
		return nil, fmt.Errorf("the runner gave the job no work directory")
	}
	dir, err := os.MkdirTemp(l.job.WorkDir, "env-")
	if err != nil {
		return nil, err
	}
	files, err := l.materialize(env.GetDependencies(), filepath.Join(dir, "staged"))
	if err != nil {
		return nil, err
	}
	opts, err := l.writeOptions(dir)
	if err != nil {
		return nil, err
	}
	le := &localEnv{envID: envID, lang: img.Language, dir: dir,
		env: []string{"SEMI_PERSISTENT_DIRECTORY=" + dir, "PIPELINE_OPTIONS_FILE=" + opts, "JOB_ID=" + l.job.ID, "JOB_NAME=" + l.job.Name}}
	switch img.Language {
	case "go":
		return le, l.prepareGo(le, files)
	case "java":
		return le, l.prepareJava(ctx, le, img, files)
	}
	return le, l.preparePython(ctx, le, img, files)
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
	var cmd *exec.Cmd
	env := []string{"WORKER_ID=" + workerID,
		"LOGGING_API_SERVICE_DESCRIPTOR=" + descriptor(ep.Logging),
		"CONTROL_API_SERVICE_DESCRIPTOR=" + descriptor(ep.Control)}
	switch le.lang {
	case "go":
		cmd = exec.Command(le.prog, "--worker=true", "--id="+workerID,
			"--logging_endpoint="+ep.Logging, "--control_endpoint="+ep.Control, "--semi_persist_dir="+le.dir)
	case "java":
		cmd = exec.Command(le.prog, le.args...)
		env = javaWorkerEnv(workerID, ep)
	default:
		cmd = exec.Command(le.prog, "-m", "apache_beam.runners.worker.sdk_worker_main")
	}
	cmd.Env = append(append(os.Environ(), le.env...), env...)
	p, err := runCmd(cmd, fmt.Sprintf("environment %q (local %s SDK worker)", le.envID, le.lang))
	if err != nil {
		return nil, err
	}
	return p, nil
}

// descriptor is an ApiServiceDescriptor in the text format the Python
// SDK parses from its environment.
func descriptor(url string) string {
	return prototext.Format(&pipepb.ApiServiceDescriptor{Url: url})
}
