package main

import (
	"context"
	"path/filepath"

	"github.com/beam-runner/beam-runner/validates"
)

// Beam's Python ValidatesRunner tests: the tests of the wheel's own test
// files marked it_validatesrunner (what Beam runs against Flink, Spark and
// Dataflow with pytest -m it_validatesrunner), unmodified, on the
// harness's job server through TestPipeline's --test-pipeline-options.
// validates/expected_python_vr.txt lists the Class/method names that must
// pass.
const (
	pyVRCheck    = "python/validatesrunner"
	pyVRExpected = "validates/expected_python_vr.txt"
)

// pyVRModules are the wheel's modules with it_validatesrunner tests that
// run on a portable runner. Left out: fn_runner_test.py (its marked class
// builds its own FnApiRunner), Dataflow's streaming-metrics test, and
// ml/inference/base_test.py (its one marked test is skipped unless the
// pipeline is streaming, and needs a model store).
var pyVRModules = []string{
	"apache_beam.pipeline_test",
	"apache_beam.metrics.metric_test",
	"apache_beam.transforms.combinefn_lifecycle_test",
	"apache_beam.transforms.combiners_test",
	"apache_beam.transforms.deduplicate_test",
	"apache_beam.transforms.dofn_lifecycle_test",
	"apache_beam.transforms.ptransform_test",
	"apache_beam.transforms.sideinputs_test",
	"apache_beam.transforms.util_test",
	"apache_beam.runners.portability.fn_api_runner.translations_test",
}

// runPyVR runs the marked tests of pyVRModules and records them.
func runPyVR(ctx context.Context, cfg config, work, endpoint string, rep *report) {
	if cfg.disabled[pyVRCheck] {
		return
	}
	expected, err := readPythonClassList(pyVRExpected)
	if err != nil {
		rep.problems = append(rep.problems, err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.prismTimeout)
	defer cancel()
	timed("Python ValidatesRunner tests", func() error {
		res, err := runPyVRTests(ctx, cfg, work, endpoint)
		rep.addChecks(pyVRCheck, res, expected, err)
		return err
	})
}

func runPyVRTests(ctx context.Context, cfg config, work, endpoint string) ([]validates.Result, error) {
	files := make([]string, len(pyVRModules))
	for i, m := range pyVRModules {
		f, err := pythonModuleFile(ctx, cfg.pythonBin, m)
		if err != nil {
			return nil, err
		}
		files[i] = f
	}
	return runPytest(ctx, cfg, pytestRun{
		label: "it_validatesrunner tests", rootdir: wheelRoot(files[0]), nodes: files,
		marker: "it_validatesrunner",
		report: filepath.Join(work, "python_vr.xml"),
		opts:   "--runner=PortableRunner --job_endpoint=" + endpoint + " --environment_type=LOOPBACK",
		parse:  byClass,
	})
}
