package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/beam-runner/beam-runner/testsupport/serverproc"
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
	defer svc.Stop()
	g := goRun{bin: bin, endpoint: x.endpoint, timeout: x.cfg.checkTimeout, work: x.work,
		extra: []string{"--expansion_addr=python_transform:" + svc.Addr}}
	res := g.run(ctx, filepath.Base(name), "^TestDataframe$", "")
	if len(res) != 1 || res[0].Status != validates.Pass {
		return fmt.Errorf("TestDataframe: %v (expansion service log %s)", res, svc.LogPath)
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
	defer svc.Stop()
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
	*serverproc.Proc
	port string
}

// startExpansion starts a Python expansion service module on a free port
// and waits until it listens; Stop ends it and the workers it started.
func startExpansion(ctx context.Context, python, logPath, module string, args ...string) (*expansion, error) {
	p, err := serverproc.Start(ctx, serverproc.Spec{
		Bin: python, Args: append([]string{"-m", module}, args...), PortFlag: "--port",
		LogPath: logPath, Ready: serverproc.Listening, ReadyLimit: 2 * time.Minute,
	})
	if err != nil {
		return nil, fmt.Errorf("expansion service %s: %w; log %s ends:\n%s", module, err, logPath, tailFile(logPath, 15))
	}
	_, port, _ := strings.Cut(p.Addr, ":")
	return &expansion{Proc: p, port: port}, nil
}
