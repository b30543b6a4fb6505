package main

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestSplitByClass(t *testing.T) {
	of, rest := splitByClass([]string{"A/test_x", "AB/test_y", "B/test_z", "A/test_w"}, "A")
	if want := []string{"A/test_x", "A/test_w"}; !reflect.DeepEqual(of, want) {
		t.Errorf("of = %q, want %q", of, want)
	}
	if want := []string{"AB/test_y", "B/test_z"}; !reflect.DeepEqual(rest, want) {
		t.Errorf("rest = %q, want %q", rest, want)
	}
}

// Several node ids go to one pytest run, before the options.
func TestPytestArgsTakeEveryNode(t *testing.T) {
	cfg := config{prismTestTimeout: time.Minute}
	r := pytestRun{rootdir: "/r", nodes: []string{"/r/f.py::C::test_a", "/r/f.py::C::test_b"},
		report: "/w/x.xml", opts: "--prism_bin=/b"}
	args := strings.Join(beamPytestArgs(cfg, r), " ")
	if !strings.Contains(args, "/r/f.py::C::test_a /r/f.py::C::test_b --test-pipeline-options=--prism_bin=/b") {
		t.Errorf("args %q", args)
	}
}
