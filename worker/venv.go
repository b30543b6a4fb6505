package worker

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"google.golang.org/protobuf/types/known/structpb"
)

// Names the Python SDK's stager gives what it stages (stager.py), which
// the container's boot installs.
const (
	pyRequirements = "requirements.txt"
	pyExtraList    = "extra_packages.txt"
	pyWorkflow     = "workflow.tar.gz"
	pySDKTarball   = "dataflow_python_sdk.tar"
	pyMainSession  = "pickled_main_session"
	pySubmitDeps   = "submission_environment_dependencies.txt"
)

// pipStep is one pip install; fallback, if set, is tried when it fails
// (requirements go first to the staged packages alone, then to the index).
type pipStep struct {
	args, fallback []string
}

// installPlan is what a job's staged files ask to be installed, in the
// boot's order: an SDK tarball, requirements, extra packages, the
// workflow (--setup_file).
type installPlan struct {
	steps []pipStep
	files []stagedFile // what the installs depend on, for the cache key
}

func planInstalls(files []stagedFile, dir string, isolation bool) installPlan {
	var p installPlan
	has := map[string]stagedFile{}
	for _, f := range files {
		has[f.name] = f
		if installInput(f) {
			p.files = append(p.files, f)
		}
	}
	pip := func(args ...string) []string {
		base := []string{"-m", "pip", "install", "--no-cache-dir", "--disable-pip-version-check"}
		if !isolation {
			base = append(base, "--no-build-isolation")
		}
		return append(base, args...)
	}
	if f, ok := has[pySDKTarball]; ok {
		p.steps = append(p.steps, pipStep{args: pip("--force-reinstall", "--no-deps", f.path)})
	}
	for _, f := range files {
		if f.name == pyRequirements || f.role == rolePipReqsFile {
			p.steps = append(p.steps, pipStep{
				args:     pip("-r", f.path, "--no-index", "--no-deps", "--find-links", dir),
				fallback: pip("-r", f.path, "--find-links", dir),
			})
		}
	}
	if f, ok := has[pyExtraList]; ok {
		for _, name := range readLines(f.path) {
			p.steps = append(p.steps, pipStep{args: pip(filepath.Join(dir, filepath.Base(name)))})
		}
	}
	if f, ok := has[pyWorkflow]; ok {
		p.steps = append(p.steps, pipStep{args: pip(f.path)})
	}
	return p
}

// installInput reports whether pip may read f: a requirements or package
// list, or a package (which --find-links offers). Other staged files, such
// as the main session or data the job reads, do not change the virtualenv.
func installInput(f stagedFile) bool {
	switch f.name {
	case pyRequirements, pyExtraList, pyWorkflow, pySDKTarball:
		return true
	}
	if f.role == rolePipReqsFile {
		return true
	}
	for _, ext := range []string{".whl", ".tar.gz", ".tgz", ".tar.bz2", ".tar", ".zip"} {
		if strings.HasSuffix(f.name, ext) {
			return true
		}
	}
	return false
}

func readLines(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if s := strings.TrimSpace(sc.Text()); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// buildIsolation mirrors the boot: pip builds without isolation unless
// the pip_use_build_isolation experiment asks for it.
func buildIsolation(opts *structpb.Struct) bool {
	for _, key := range []string{"beam:option:experiments:v1", "experiments"} {
		for _, v := range opts.GetFields()[key].GetListValue().GetValues() {
			if v.GetStringValue() == "pip_use_build_isolation" {
				return true
			}
		}
	}
	return false
}

// venvKey names a virtualenv by everything its contents follow from.
func venvKey(py pyInfo, p installPlan) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00", py.path, py.version, py.beam)
	for _, s := range p.steps {
		fmt.Fprintf(h, "%q\x00", s.args)
	}
	files := slices.Clone(p.files)
	slices.SortFunc(files, func(a, b stagedFile) int { return strings.Compare(a.name, b.name) })
	for _, f := range files {
		fh, err := os.Open(f.path)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\x00", f.name)
		_, err = io.Copy(h, fh)
		fh.Close()
		if err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:24], nil
}

const (
	venvReady  = ".beam-runner-ready"
	venvMaxAge = 7 * 24 * time.Hour
)

func (r *pyRuntime) cacheDir() (string, error) {
	if r.cfg.CacheDir != "" {
		return r.cfg.CacheDir, nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory for virtualenvs: %w", err)
	}
	return filepath.Join(base, "beam-runner", "venvs"), nil
}

// venv returns a virtualenv on py's site packages with plan installed:
// built once per content, under a file lock so that concurrent jobs and
// servers build it once, and reused by later jobs.
func (r *pyRuntime) venv(ctx context.Context, py pyInfo, plan installPlan) (string, error) {
	key, err := venvKey(py, plan)
	if err != nil {
		return "", err
	}
	cache, err := r.cacheDir()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", err
	}
	dir := filepath.Join(cache, key)
	unlock, err := lockFile(ctx, dir+".lock")
	if err != nil {
		return "", err
	}
	defer unlock()
	ready := filepath.Join(dir, venvReady)
	if _, err := os.Stat(ready); err == nil {
		now := time.Now()
		os.Chtimes(ready, now, now) // last use, for sweepVenvs
		return dir, nil
	}
	r.job.Warn(fmt.Sprintf("building virtualenv %s for the job's Python packages (%d pip installs); later jobs with the same packages reuse it", dir, len(plan.steps)))
	if err := buildVenv(ctx, py, plan, dir); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	if err := os.WriteFile(ready, nil, 0o644); err != nil {
		return "", err
	}
	sweepVenvs(cache, key)
	return dir, nil
}

func buildVenv(ctx context.Context, py pyInfo, plan installPlan, dir string) error {
	os.RemoveAll(dir) // a build that died half way
	if err := runLogged(ctx, py.exe, "-m", "venv", "--system-site-packages", dir); err != nil {
		return fmt.Errorf("creating a virtualenv with %s: %w", py.exe, err)
	}
	python := filepath.Join(dir, "bin", "python")
	for _, s := range plan.steps {
		err := runLogged(ctx, python, s.args...)
		if err != nil && s.fallback != nil {
			err = runLogged(ctx, python, s.fallback...)
		}
		if err != nil {
			return fmt.Errorf("installing the job's Python packages (%s): %w", strings.Join(s.args[1:], " "), err)
		}
	}
	return nil
}

// runLogged runs a setup command; its error carries the output's tail.
func runLogged(ctx context.Context, prog string, args ...string) error {
	out := newTail(os.Stderr, outputLines)
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(os.Environ(), "PIP_ROOT_USER_ACTION=ignore", "PIP_NO_INPUT=1")
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s, its last output:\n  %s", filepath.Base(prog), describeExit(err), strings.Join(out.Lines(), "\n  "))
	}
	return nil
}

// lockFile takes an exclusive lock on path, polling so ctx can end the
// wait; unlock releases it.
func lockFile(ctx context.Context, path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err == nil {
			return func() { f.Close() }, nil
		} else if err != syscall.EWOULDBLOCK {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// sweepVenvs removes the cache's virtualenvs unused for venvMaxAge, but
// for keep and any another job holds.
func sweepVenvs(cache, keep string) {
	entries, err := os.ReadDir(cache)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || e.Name() == keep {
			continue
		}
		dir := filepath.Join(cache, e.Name())
		st, err := os.Stat(filepath.Join(dir, venvReady))
		if err != nil || time.Since(st.ModTime()) < venvMaxAge {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		unlock, err := lockFile(ctx, dir+".lock")
		cancel()
		if err != nil {
			continue
		}
		os.RemoveAll(dir)
		os.Remove(dir + ".lock")
		unlock()
	}
}
