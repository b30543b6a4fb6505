package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/beam-runner/beam-runner/validates"
)

// Cross-language checks: pipelines of one SDK that use transforms of
// another through an expansion service, run against the server.
//   - Beam's Go TestDataframe applies Python's DataframeTransform through
//     Python's expansion service, started with --serve_loopback_worker (an
//     anyof environment: the service's own worker pool or the SDK
//     container) and without it (the SDK container, which the server runs
//     as local worker processes);
//   - Beam's Python ValidateRunnerXlangTest (from the wheel, unmodified)
//     applies the eight cross-language test transforms of Python's test
//     expansion service; the methods in validates/expected_xlang.txt must
//     pass.
const (
	xlangAnyOf     = "xlang/dataframe-anyof"
	xlangContainer = "xlang/dataframe-container"
	xlangPython    = "xlang/python"

	dataframePkg    = "github.com/apache/beam/sdks/v2/go/test/integration/transforms/xlang/dataframe"
	xlangModule     = "apache_beam.transforms.validate_runner_xlang_test"
	xlangClass      = "ValidateRunnerXlangTest"
	xlangExpected   = "validates/expected_xlang.txt"
	expansionModule = "apache_beam.runners.portability.expansion_service_main"
	// Implements the test transforms; needs scikit-learn and
	// beautifulsoup4 (setup installs them).
	testExpansionModule = "apache_beam.runners.portability.expansion_service_test"
)

func xlangChecks() []string { return []string{xlangAnyOf, xlangContainer, xlangPython} }

// runXlang runs the enabled cross-language checks and records them.
func runXlang(ctx context.Context, cfg config, work, endpoint string, rep *report) {
	x := xlangRun{cfg: cfg, work: work, endpoint: endpoint}
	var bin string
	var buildErr error
	if !cfg.disabled[xlangAnyOf] || !cfg.disabled[xlangContainer] {
		bin = filepath.Join(work, "dataframe.test")
		buildErr = timed("build "+dataframePkg+" test binary", func() error {
			return goCmd(ctx, "test", "-c", "-o", bin, dataframePkg)
		})
	}
	for _, c := range []struct {
		name string
		args []string
	}{
		{xlangAnyOf, []string{"--fully_qualified_name_glob=*", "--serve_loopback_worker"}},
		{xlangContainer, []string{"--fully_qualified_name_glob=*"}},
	} {
		if cfg.disabled[c.name] {
			continue
		}
		timed(c.name, func() error {
			rep.addChecks(c.name, []validates.Result{result(c.name, func() error {
				if buildErr != nil {
					return buildErr
				}
				return x.dataframe(ctx, bin, c.name, c.args)
			})}, []string{c.name}, nil)
			return nil
		})
	}
	if !cfg.disabled[xlangPython] {
		timed("Python "+xlangClass, func() error {
			res, names, err := x.python(ctx)
			rep.addChecks(xlangPython, res, names, err)
			return err
		})
	}
}

type xlangRun struct {
	cfg            config
	work, endpoint string
}

// dataframe runs TestDataframe against a fresh expansion service.
func (x xlangRun) dataframe(ctx context.Context, bin, name string, serviceArgs []string) error {
	svc, err := startExpansion(ctx, x.cfg.pythonBin, filepath.Join(x.work, filepath.Base(name)+"-expansion.log"), expansionModule, serviceArgs...)
	if err != nil {
		return err
	}
	defer svc.stop()
	g := goRun{bin: bin, endpoint: x.endpoint, timeout: x.cfg.checkTimeout, work: x.work,
		extra: []string{"--expansion_addr=python_transform:" + svc.addr}}
	res := g.run(ctx, filepath.Base(name), "^TestDataframe$", "")
	if len(res) != 1 || res[0].Status != validates.Pass {
		return fmt.Errorf("TestDataframe: %v (expansion service log %s)", res, svc.log)
	}
	return nil
}

// python runs Beam's ValidateRunnerXlangTest against Python's test
// expansion service, returning each method's result and the expected ones.
func (x xlangRun) python(ctx context.Context) ([]validates.Result, []string, error) {
	expected, err := readPythonList(xlangExpected, xlangClass)
	if err != nil {
		return nil, nil, err
	}
	svc, err := startExpansion(ctx, x.cfg.pythonBin, filepath.Join(x.work, "xlang-test-expansion.log"), testExpansionModule)
	if err != nil {
		return nil, expected, err
	}
	defer svc.stop()
	file, err := pythonModuleFile(ctx, x.cfg.pythonBin, xlangModule)
	if err != nil {
		return nil, expected, err
	}
	ctx, cancel := context.WithTimeout(ctx, x.cfg.prismTimeout)
	defer cancel()
	report := filepath.Join(x.work, "xlang.xml")
	opts := "--runner=PortableRunner --job_endpoint=" + x.endpoint + " --environment_type=LOOPBACK"
	res, err := runBeamPytest(ctx, x.cfg, file, xlangClass, report, opts, "EXPANSION_PORT="+svc.port)
	return res, expected, err
}

// expansion is a running expansion service.
type expansion struct {
	addr, port, log string
	cmd             *exec.Cmd
	exited          chan struct{}
}

// startExpansion starts a Python expansion service module on a free port
// and waits until it listens.
func startExpansion(ctx context.Context, python, logPath, module string, args ...string) (*expansion, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(python, append([]string{"-m", module, "-p", strconv.Itoa(port)}, args...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	setProcAttrs(cmd) // its loopback workers share its group
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	e := &expansion{addr: "localhost:" + strconv.Itoa(port), port: strconv.Itoa(port), log: logPath, cmd: cmd, exited: make(chan struct{})}
	go func() { cmd.Wait(); logf.Close(); close(e.exited) }()
	if err := e.waitListening(ctx, 2*time.Minute); err != nil {
		e.stop()
		return nil, fmt.Errorf("expansion service %s: %w; log %s ends:\n%s", module, err, logPath, tailFile(logPath, 15))
	}
	return e, nil
}

func (e *expansion) waitListening(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if conn, err := net.DialTimeout("tcp", e.addr, time.Second); err == nil {
			conn.Close()
			return nil
		}
		select {
		case <-e.exited:
			return errors.New("exited before listening")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("not listening on %s after %v", e.addr, limit)
}

func (e *expansion) stop() {
	terminate(e.cmd)
	select {
	case <-e.exited:
	case <-time.After(10 * time.Second):
		killGroup(e.cmd)
		<-e.exited
	}
}
