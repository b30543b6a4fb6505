package worker

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/beam-runner/beam-runner/worker/sdkenv"
)

// PythonConfig is how local Python SDK workers run.
type PythonConfig struct {
	// Interpreter runs them; "" looks for python3.X (the image's
	// version), then python3, on PATH.
	Interpreter string
	// CacheDir keeps the virtualenvs built for jobs' requirements; "" is
	// $XDG_CACHE_HOME/beam-runner/venvs.
	CacheDir string
}

// pyRuntime runs Python SDK workers here: an interpreter with the image's
// Python and Beam, in a virtualenv when the job stages packages.
type pyRuntime struct {
	cfg PythonConfig
	job Job
}

func init() {
	registerRuntime(sdkenv.Python, runtimeSpec{process: true,
		new: func(cfg Config, job Job) runtime { return &pyRuntime{cfg: cfg.Python, job: job} }})
}

func (r *pyRuntime) command(le *localEnv, workerID string, ep Endpoints) (*exec.Cmd, []string) {
	return exec.Command(le.prog, "-m", "apache_beam.runners.worker.sdk_worker_main"), bootEnv(workerID, ep)
}

// pyInfo is what an interpreter reported of itself.
type pyInfo struct {
	path    string // as resolved on PATH
	exe     string // sys.executable: the interpreter behind a shim (pyenv's)
	version string // "3.11"
	beam    string // apache_beam.__version__, "" if it has none
}

func (p pyInfo) String() string {
	beam := "no apache-beam"
	if p.beam != "" {
		beam = "apache-beam " + p.beam
	}
	name := p.path
	if p.exe != "" && p.exe != p.path {
		name += " (" + p.exe + ")"
	}
	return fmt.Sprintf("%s: Python %s, %s", name, p.version, beam)
}

// pyProbes caches interpreter probes: each starts a Python process.
var pyProbes struct {
	sync.Mutex
	m map[string]pyInfo
}

const pyProbeTimeout = 60 * time.Second

func probePython(ctx context.Context, path string) (pyInfo, error) {
	pyProbes.Lock()
	defer pyProbes.Unlock()
	if info, ok := pyProbes.m[path]; ok {
		return info, nil
	}
	ctx, cancel := context.WithTimeout(ctx, pyProbeTimeout)
	defer cancel()
	// The installed distribution's metadata answers in a tenth of the
	// second importing Beam takes (each server's first job waits on it);
	// a Beam importable without metadata (a source tree) is imported.
	const script = `import sys
print("%d.%d" % sys.version_info[:2])
print(sys.executable)
try:
    import importlib.metadata
    print(importlib.metadata.version("apache-beam"))
except Exception:
    try:
        import apache_beam
        print(apache_beam.__version__)
    except Exception:
        print("")`
	out, err := exec.CommandContext(ctx, path, "-c", script).Output()
	if err != nil {
		return pyInfo{}, fmt.Errorf("asking %s for its version: %w", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	info := pyInfo{path: path, exe: path, version: strings.TrimSpace(lines[0])}
	if len(lines) > 2 {
		if exe := strings.TrimSpace(lines[1]); exe != "" {
			info.exe = exe
		}
		info.beam = strings.TrimSpace(lines[len(lines)-1])
	}
	if pyProbes.m == nil {
		pyProbes.m = map[string]pyInfo{}
	}
	pyProbes.m[path] = info
	return info, nil
}

// python finds the interpreter for img: the one the server was told to
// use, else python3.X then python3 on PATH, whichever has the image's
// Python and Beam versions. The error names what was found.
func (r *pyRuntime) python(ctx context.Context, img sdkenv.Image) (pyInfo, error) {
	if r.cfg.Interpreter != "" {
		info, err := probePython(ctx, r.cfg.Interpreter)
		if err != nil {
			return pyInfo{}, fmt.Errorf("--sdk_python: %w", err)
		}
		if info.beam != img.Version {
			return pyInfo{}, fmt.Errorf("the image is Beam %s, but --sdk_python %s; install apache-beam==%s there", img.Version, info, img.Version)
		}
		return info, nil
	}
	var found []string
	for _, name := range pythonCandidates(img) {
		path, err := exec.LookPath(name)
		if err != nil {
			continue
		}
		info, err := probePython(ctx, path)
		if err != nil {
			found = append(found, err.Error())
			continue
		}
		if info.version == img.Variant && info.beam == img.Version {
			return info, nil
		}
		found = append(found, name+" ("+info.String()+")")
	}
	if len(found) == 0 {
		return pyInfo{}, fmt.Errorf("the image is Python %s with Beam %s, and no Python interpreter is on PATH (%s); name one with --sdk_python", img.Variant, img.Version, strings.Join(pythonCandidates(img), ", "))
	}
	return pyInfo{}, fmt.Errorf("the image is Python %s with Beam %s, but no interpreter on PATH has both: %s; install apache-beam==%s or name an interpreter with --sdk_python", img.Variant, img.Version, strings.Join(found, "; "), img.Version)
}

func pythonCandidates(img sdkenv.Image) []string {
	return []string{"python" + img.Variant, "python3", "python"}
}

// preparePython sets up what the Python SDK container's boot would: the
// staged files in the semi-persistent directory (the pickled main session
// among them) and the job's packages installed, here into a virtualenv
// cached by their content (venv.go).
func (r *pyRuntime) prepare(ctx context.Context, le *localEnv, img sdkenv.Image, files []stagedFile) error {
	info, err := r.python(ctx, img)
	if err != nil {
		return err
	}
	le.prog = info.exe // a shim would cost every worker start its own process
	le.about = info.String()
	plan := planInstalls(files, filepath.Join(le.dir, "staged"), buildIsolation(r.job.Options))
	if len(plan.steps) == 0 {
		return nil
	}
	venv, err := r.venv(ctx, info, plan)
	if err != nil {
		return err
	}
	le.prog = filepath.Join(venv, "bin", "python")
	le.env = append(le.env, "VIRTUAL_ENV="+venv)
	le.about += fmt.Sprintf(", with the job's packages in virtualenv %s", venv)
	return nil
}
