package main

import (
	"context"
	"path/filepath"
	"strings"

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

// A beamTests is one run of Beam's own Python test files from the wheel,
// unmodified, on the harness's server, checked against its list.
type beamTests struct {
	check, label, expected string
	modules                []string // module, or module::Class
	marker                 string   // pytest -m; "": every test collected
}

// Beam's trigger tests: trigger_test.py's transcript tests through
// TestStream (trigger_transcripts.yaml: every trigger, accumulation mode,
// timestamp combiner and lateness case, checked by a stateful DoFn in the
// pipeline, strictly and out of order) and its pipeline tests.
const (
	pyTriggersCheck    = "python/trigger_test"
	pyTriggersExpected = "validates/expected_python_triggers.txt"
	triggerTestModule  = "apache_beam.transforms.trigger_test"
)

func beamTestRuns() []beamTests {
	return []beamTests{{
		check: pyVRCheck, label: "Python ValidatesRunner tests", expected: pyVRExpected,
		modules: pyVRModules, marker: "it_validatesrunner",
	}, {
		check: pyTriggersCheck, label: "Python trigger_test.py", expected: pyTriggersExpected,
		modules: []string{
			triggerTestModule + "::TestStreamTranscriptTest",
			triggerTestModule + "::WeakTestStreamTranscriptTest",
			triggerTestModule + "::TriggerPipelineTest",
		},
	}}
}

func beamTestChecks() []string {
	var names []string
	for _, b := range beamTestRuns() {
		names = append(names, b.check)
	}
	return names
}

// runBeamTests runs the enabled runs of beamTestRuns and records them.
func runBeamTests(ctx context.Context, cfg config, work, endpoint string, rep *report) {
	for _, b := range beamTestRuns() {
		if cfg.disabled[b.check] {
			continue
		}
		expected, err := readPythonClassList(b.expected)
		if err != nil {
			rep.problems = append(rep.problems, err.Error())
			continue
		}
		timed(b.label, func() error {
			rctx, cancel := context.WithTimeout(ctx, cfg.prismTimeout)
			defer cancel()
			res, err := b.run(rctx, cfg, work, endpoint)
			rep.addChecks(b.check, res, expected, err)
			return err
		})
	}
}

func (b beamTests) run(ctx context.Context, cfg config, work, endpoint string) ([]validates.Result, error) {
	nodes := make([]string, len(b.modules))
	root := ""
	for i, m := range b.modules {
		mod, class, _ := strings.Cut(m, "::")
		f, err := pythonModuleFile(ctx, cfg.pythonBin, mod)
		if err != nil {
			return nil, err
		}
		if root == "" {
			root = wheelRoot(f)
		}
		nodes[i] = f
		if class != "" {
			nodes[i] += "::" + class
		}
	}
	return runPytest(ctx, cfg, pytestRun{
		label: b.label, rootdir: root, nodes: nodes, marker: b.marker,
		report: filepath.Join(work, strings.ReplaceAll(b.check, "/", "_")+".xml"),
		opts:   "--runner=PortableRunner --job_endpoint=" + endpoint + " --environment_type=LOOPBACK",
		parse:  byClass,
	})
}
