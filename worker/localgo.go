package worker

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/beam-runner/beam-runner/worker/sdkenv"
)

// goRuntime runs Go SDK workers here: the job's staged worker binary.
type goRuntime struct{}

func init() {
	// Not process: a Go PROCESS environment runs its command as given,
	// as it always has (only DOCKER ones of Beam's Go image run here).
	registerRuntime(sdkenv.Go, runtimeSpec{new: func(Config, Job) runtime { return goRuntime{} }})
}

func (goRuntime) command(le *localEnv, workerID string, ep Endpoints) (*exec.Cmd, []string) {
	return exec.Command(le.prog, "--worker=true", "--id="+workerID,
		"--logging_endpoint="+ep.Logging, "--control_endpoint="+ep.Control, "--semi_persist_dir="+le.dir), bootEnv(workerID, ep)
}

// prepare finds the job's staged Go worker binary, as the Go SDK
// container's boot does (the artifact with the worker-binary role, else
// the only artifact, else the one named "worker"), and copies it where it
// may be executed.
func (goRuntime) prepare(_ context.Context, le *localEnv, _ sdkenv.Image, files []stagedFile) error {
	bin, err := goWorkerBinary(files)
	if err != nil {
		return err
	}
	prog := filepath.Join(le.dir, "bin", "worker")
	if err := copyExecutable(bin.path, prog); err != nil {
		return fmt.Errorf("Go worker binary %q: %w", bin.name, err)
	}
	le.prog = prog
	le.about = "the job's staged Go worker binary " + bin.name
	return nil
}

func goWorkerBinary(files []stagedFile) (stagedFile, error) {
	switch len(files) {
	case 0:
		return stagedFile{}, fmt.Errorf("the job staged no Go worker binary (no artifacts)")
	case 1:
		return files[0], nil
	}
	for _, f := range files {
		if f.role == roleGoWorker {
			return f, nil
		}
	}
	for _, f := range files {
		if f.name == "worker" {
			return f, nil
		}
	}
	return stagedFile{}, fmt.Errorf("none of the job's %d artifacts is a Go worker binary (role %s or name \"worker\")", len(files), roleGoWorker)
}

func copyExecutable(from, to string) error {
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	return writeFile(to, 0o755, src)
}
