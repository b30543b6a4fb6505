package bench

import (
	"path/filepath"
	"strconv"
)

// Python workloads run Beam's Python SDK: Python's wordcount example, a
// GroupByKey of synthetic records, and a CPU-bound ParDo whose SDK workers
// are processes of an EXTERNAL worker pool (worker_pool_main), once with
// the runner's default number of workers and once with one, to show what
// several worker processes buy where one interpreter lock would serialize.
// "direct" is then Python's DirectRunner (FnApiRunner, in process).
// py-wordcount-process is the wordcount with Python's default environment
// on beam-runner (its SDK container, run as local worker processes: one
// interpreter per core), against Prism's LOOPBACK and the DirectRunner.
var pythonWorkloads = []Workload{
	{Name: "py-gbk", Python: true, Script: "bench/py/gbk.py", Records: 1,
		Args: func(s Sizes, _, out string) []string {
			return []string{"--records=" + itoa(s.Records), "--key_size=" + itoa(s.KeySize),
				"--value_size=" + itoa(s.ValueSize), "--output=" + out}
		}},
	{Name: "py-wordcount", Python: true, Text: true,
		Args: func(_ Sizes, in, out string) []string {
			return []string{"-m", "apache_beam.examples.wordcount", "--input=" + in, "--output=" + out}
		}},
	{Name: "py-wordcount-process", Python: true, Text: true, DefaultEnv: true,
		Args: func(_ Sizes, in, out string) []string {
			return []string{"-m", "apache_beam.examples.wordcount", "--input=" + in, "--output=" + out}
		}},
	cpuWorkload("py-cpu"),
	cpuWorkload("py-cpu-1w", "--"+WorkersOption+"=1"),
}

// WorkersOption is beam-runner's job option for SDK workers per
// environment; other runners ignore it.
const WorkersOption = "workers_per_environment"

func cpuWorkload(name string, extra ...string) Workload {
	return Workload{Name: name, Python: true, Pool: true, Script: "bench/py/cpu.py",
		Args: func(s Sizes, _, out string) []string {
			return append([]string{"--elements=" + itoa(s.CPUElements), "--rounds=100000", "--output=" + out}, extra...)
		}}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// command is the program and arguments of one run of w on r; endpoint is
// the job server's, pool the EXTERNAL worker pool's (or "").
func command(c *Config, w Workload, r Runner, in, out, endpoint, pool string) (string, []string) {
	args := w.Args(c.Sizes, in, out)
	if !w.Python {
		if !r.Server {
			return w.Binary(c.WorkDir), append(args, "--runner="+r.Name)
		}
		return w.Binary(c.WorkDir), append(args, "--runner=universal", "--endpoint="+endpoint, "--environment_type=LOOPBACK")
	}
	if w.Script != "" {
		args = append([]string{filepath.Join(c.RepoRoot, w.Script)}, args...)
	}
	switch {
	case !r.Server:
		args = append(args, "--runner=DirectRunner")
	case w.DefaultEnv && r.BinaryName() == "beam-runner":
		args = append(args, "--runner=PortableRunner", "--job_endpoint="+endpoint)
	case pool != "":
		args = append(args, "--runner=PortableRunner", "--job_endpoint="+endpoint,
			"--environment_type=EXTERNAL", "--environment_config="+pool)
	default:
		args = append(args, "--runner=PortableRunner", "--job_endpoint="+endpoint, "--environment_type=LOOPBACK")
	}
	return c.python(), args
}

func (c *Config) python() string {
	if c.Python != "" {
		return c.Python
	}
	return "python3"
}
