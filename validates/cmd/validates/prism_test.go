package main

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The quoted binary path must come back whole from Python's shlex.split,
// which the test applies to --test-pipeline-options.
func TestShellQuoteRoundTripsThroughShlex(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 not on PATH (scripts/setup.sh needs it too)")
	}
	for _, path := range []string{"/a/beam-runner", "/dir with space/bin", `/it's/"q"/$x\y`} {
		opts := "--prism_bin=" + shellQuote(path) + " --environment_type=LOOPBACK"
		out, err := exec.Command(py, "-c", "import shlex, sys; print(shlex.split(sys.argv[1])[0])", opts).Output()
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSuffix(string(out), "\n"); got != "--prism_bin="+path {
			t.Errorf("shlex.split gave %q for %q", got, path)
		}
	}
}

func TestPrismArgsSelectTheClassWithTimeouts(t *testing.T) {
	cfg := config{prismTestTimeout: 90 * time.Second}
	file := "/sp/apache_beam/runners/portability/prism_runner_test.py"
	r := pytestRun{rootdir: wheelRoot(file), nodes: []string{file + "::" + prismClass}, report: "/w/prism.xml",
		opts: "--prism_bin=/bin/br --environment_type=LOOPBACK"}
	args := strings.Join(beamPytestArgs(cfg, r), " ")
	for _, want := range []string{
		"--rootdir=/sp ", "--timeout=90 ", "--timeout_method=thread",
		file + "::PrismRunnerTest", "--junitxml=/w/prism.xml", "-p beam_options_plugin",
		"--test-pipeline-options=--prism_bin=/bin/br --environment_type=LOOPBACK",
	} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
}
