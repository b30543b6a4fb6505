package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/beam-runner/beam-runner/testsupport/serverproc"
)

// Runner is one way to execute a pipeline: a job server we start, or the Go
// direct runner inside the pipeline program.
type Runner struct {
	Name   string
	Server bool // true: a job server binary in bin/, driven with LOOPBACK workers
}

// Runners lists the runners in table order; beam-runner first because every
// ratio is relative to it.
var Runners = []Runner{{"beam-runner", true}, {LimitedRunner, true}, {"prism", true}, {"direct", false}}

// LimitedRunner is beam-runner run with Config.MemoryLimit: beside
// beam-runner, its rows are the time and memory a memory limit costs.
const LimitedRunner = "beam-runner-limited"

// BinaryName is the server binary the runner uses in bin/.
func (r Runner) BinaryName() string {
	if r.Name == LimitedRunner {
		return "beam-runner"
	}
	return r.Name
}

// SelectRunners resolves a comma-separated list against Runners.
func SelectRunners(list string) ([]Runner, error) {
	var names []string
	for _, r := range Runners {
		names = append(names, r.Name)
	}
	want, err := splitKnown(list, names)
	if err != nil {
		return nil, fmt.Errorf("--runners: %w", err)
	}
	var out []Runner
	for _, r := range Runners {
		if want[r.Name] {
			out = append(out, r)
		}
	}
	return out, nil
}

// Result is one run of one workload on one runner.
type Result struct {
	Workload, Runner string
	Round            int
	Wall             time.Duration // client process wall time
	Reported         time.Duration // load tests' own runtime metric, if printed
	ServerRSSKB      int64         // job server peak RSS; 0 for direct
	ClientRSSKB      int64         // pipeline program peak RSS (holds the SDK workers)
	Counts           map[string]int64
	Signature        string // what must be equal across runners; "" if unknown
	Err              string
}

// serverFlags gives beam-runner a fresh store per run, so runs neither
// share a directory nor leave records in the user's cache dir.
func serverFlags(c *Config, r Runner, tag string) []string {
	if r.BinaryName() != "beam-runner" {
		return nil
	}
	dir := filepath.Join(c.WorkDir, "state", tag)
	os.RemoveAll(dir)
	flags := []string{"--state_dir=" + dir}
	if r.Name == LimitedRunner {
		flags = append(flags, "--memory_limit="+c.MemoryLimit)
	}
	return flags
}

// RunOne runs w on r once. A server is started per run so its VmHWM is this
// run's peak, not the highest of everything the server ran before.
func RunOne(ctx context.Context, c *Config, w Workload, r Runner, round int) Result {
	res := Result{Workload: w.Name, Runner: r.Name, Round: round}
	tag := fmt.Sprintf("%s-%s-%d", w.Name, r.Name, round)
	out := filepath.Join(c.WorkDir, "out", tag+".txt")
	removeOutput(out)
	var srv *Server
	endpoint, pool := "", ""
	if r.Server {
		var err error
		srv, err = StartServer(ctx, filepath.Join(c.WorkDir, "bin", r.BinaryName()), c.logPath(tag+"-server"), serverFlags(c, r, tag)...)
		if err != nil {
			res.Err = err.Error()
			return res
		}
		defer srv.Stop()
		endpoint = srv.Endpoint
		if w.Pool {
			p, err := serverproc.StartPythonWorkerPool(c.python(), c.logPath(tag+"-pool"))
			if err != nil {
				res.Err = err.Error()
				return res
			}
			defer p.Stop()
			pool = p.Addr
		}
	}
	bin, args := command(c, w, r, TextPath(c.WorkDir, w.TextMB(c.Sizes)), out, endpoint, pool)
	cr := RunClient(ctx, bin, args, c.logPath(tag+"-client"), c.Timeout)
	res.Wall, res.ClientRSSKB = cr.Wall, cr.PeakRSSKB
	if srv != nil {
		res.ServerRSSKB = srv.PeakRSSKB()
	}
	if cr.Err != nil {
		res.Err = cr.Err.Error()
		return res
	}
	res.Reported, _ = ParseRuntime(cr.Output)
	res.Signature, res.Err = signature(ctx, w, srv, out, &res)
	return res
}

// signature captures the run's output identity: the output files for
// wordcount and Python workloads, the job's PCollection element counts for load tests (which
// the direct runner cannot report, so it has none).
func signature(ctx context.Context, w Workload, srv *Server, out string, res *Result) (string, string) {
	if w.WritesOutput() {
		sig, err := WordcountSignature(out)
		return sig, errString(err)
	}
	if srv == nil {
		return "", ""
	}
	counts, err := srv.ElementCounts(ctx)
	if err != nil {
		return "", "reading job metrics: " + err.Error()
	}
	res.Counts = counts
	return CountsSignature(counts), ""
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// removeOutput deletes a previous run's output, shards included: a stale
// shard would be read as part of this run's.
func removeOutput(out string) {
	shards, _ := filepath.Glob(out + "-*")
	for _, f := range append(shards, out) {
		os.Remove(f)
	}
}
