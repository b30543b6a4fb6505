package bench

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Sizes are the knobs every workload reads; one value per flag so a run is
// described fully by its command line.
type Sizes struct {
	Records     int64 // synthetic source records per load test
	KeySize     int64 // bytes per key
	ValueSize   int64 // bytes per value
	WordcountMB int64 // size of the generated wordcount input
	// LargeWordcountMB is wordcount-600's input size (600 MiB unless a
	// smoke run shrinks it).
	LargeWordcountMB int64
	CPUElements      int64 // elements of the CPU-bound Python ParDo
}

// Workload is one program and how to call it. Args excludes runner flags:
// the same arguments go to every runner, which is what makes outputs
// comparable.
type Workload struct {
	Name    string // short name used in flags and the table
	Program string // binary name in the work dir's bin/ (Go)
	Pkg     string // Go package it is built from
	Args    func(s Sizes, in, out string) []string

	Python bool   // run by the Python interpreter; direct is Python's DirectRunner
	Script string // Python script, relative to the repository root ("" when Args name a module)
	Text   bool   // reads the generated wordcount text
	// Large reads the LargeWordcountMB text instead of WordcountMB's, runs
	// on beam-runner alone (the Go direct runner needs 5.9 GiB for 60 MiB,
	// Prism more) and has its counts checked against the bench's own
	// count of the input (InputWordcountSignature), there being no other
	// runner to compare with.
	Large bool
	// Records is how many copies of the synthetic records the workload
	// reads (CoGroupByKey joins two), for its payload; 0: none.
	Records int64
	Pool    bool // job servers run its SDK workers in an EXTERNAL worker pool
	// DefaultEnv submits to beam-runner with no --environment_type (the
	// SDK's container image, which beam-runner runs as local worker
	// processes without Docker); other job servers get LOOPBACK.
	DefaultEnv bool
}

const beamGo = "github.com/apache/beam/sdks/v2/go/"

// Workloads lists what the benchmark knows, in table order.
var Workloads = []Workload{
	loadTest("gbk", "group_by_key", "--fanout=1", "--iterations=1"),
	loadTest("combine", "combine", "--fanout=1", "--top_count=20"),
	loadTest("pardo", "pardo", "--iterations=1"),
	loadTest("sideinput", "sideinput", "--access_percentage=100"),
	cogbkTest(),
	goWordcount("wordcount", false),
	goWordcount("wordcount-600", true),
}

func goWordcount(name string, large bool) Workload {
	return Workload{Name: name, Program: "wordcount", Pkg: beamGo + "examples/wordcount", Text: true, Large: large,
		Args: func(_ Sizes, in, out string) []string {
			return []string{"--input=" + in, "--output=" + out}
		}}
}

func init() { Workloads = append(Workloads, pythonWorkloads...) }

// DefaultWorkloads are Beam's Go GroupByKey, Combine and ParDo load tests
// plus wordcount; SideInput and CoGBK run when asked for.
const DefaultWorkloads = "gbk,combine,pardo,wordcount"

func loadTest(name, program string, extra ...string) Workload {
	return Workload{Name: name, Program: program, Pkg: beamGo + "test/load/" + program, Records: 1,
		Args: func(s Sizes, _, _ string) []string {
			return append([]string{"--input_options=" + s.InputOptions()}, extra...)
		}}
}

// cogbkTest joins two sources of the same shape, so the join is as large as
// the GroupByKey test's input twice over.
func cogbkTest() Workload {
	w := loadTest("cogbk", "cogbk", "--iterations=1")
	w.Records = 2
	w.Args = func(s Sizes, _, _ string) []string {
		o := s.InputOptions()
		return []string{"--input_options=" + o, "--co_input_options=" + o, "--iterations=1"}
	}
	return w
}

// InputOptions is the synthetic source's JSON config. Hot keys stay off so
// keys are uniform.
func (s Sizes) InputOptions() string {
	return fmt.Sprintf(`{"num_records":%d,"key_size":%d,"value_size":%d,"num_hot_keys":0}`,
		s.Records, s.KeySize, s.ValueSize)
}

// TextMB is the size of the text the workload reads (0 if none).
func (w Workload) TextMB(s Sizes) int64 {
	switch {
	case !w.Text:
		return 0
	case w.Large:
		return s.LargeWordcountMB
	}
	return s.WordcountMB
}

// PayloadBytes is how many bytes of input the workload moves: its text, or
// its synthetic records (once per input); 0 when not known (py-cpu).
func (w Workload) PayloadBytes(s Sizes) int64 {
	if w.Text {
		return w.TextMB(s) << 20
	}
	return w.Records * s.Records * (s.KeySize + s.ValueSize)
}

// RunsOn reports whether the benchmark runs w on r: a Large workload only
// on beam-runner (with or without a memory limit).
func (w Workload) RunsOn(r Runner) bool { return !w.Large || r.BinaryName() == "beam-runner" }

// WritesOutput reports whether outputs are compared by file, not metrics:
// wordcount and every Python workload write theirs.
func (w Workload) WritesOutput() bool { return w.Text || w.Python }

// Binary is where Build puts the workload's program (Go only).
func (w Workload) Binary(workDir string) string {
	return filepath.Join(workDir, "bin", w.Program)
}

// SelectWorkloads resolves a comma-separated list against Workloads,
// keeping the table order and rejecting unknown names.
func SelectWorkloads(list string) ([]Workload, error) {
	want, err := splitKnown(list, workloadNames())
	if err != nil {
		return nil, fmt.Errorf("--workloads: %w", err)
	}
	var out []Workload
	for _, w := range Workloads {
		if want[w.Name] {
			out = append(out, w)
		}
	}
	return out, nil
}

func workloadNames() []string {
	var names []string
	for _, w := range Workloads {
		names = append(names, w.Name)
	}
	return names
}

// splitKnown parses "a,b" into a set, erroring on names not in known.
func splitKnown(list string, known []string) (map[string]bool, error) {
	ok := map[string]bool{}
	for _, k := range known {
		ok[k] = true
	}
	set := map[string]bool{}
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if !ok[n] {
			return nil, fmt.Errorf("unknown name %q (known: %s)", n, strings.Join(known, ","))
		}
		set[n] = true
	}
	if len(set) == 0 {
		return nil, fmt.Errorf("empty list")
	}
	return set, nil
}
