package worker

import (
	"fmt"
	"os"
	"path/filepath"
)

// prepareGo finds the job's staged Go worker binary, as the Go SDK
// container's boot does (the artifact with the worker-binary role, else
// the only artifact, else the one named "worker"), and copies it where it
// may be executed.
func (l *Launcher) prepareGo(le *localEnv, files []stagedFile) error {
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
