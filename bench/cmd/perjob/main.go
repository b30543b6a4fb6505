// Command perjob measures the per-job overhead of tiny pipelines on
// beam-runner and Prism, one after the other in one run, as SDKs use them:
//
//   - Python: bench/py/tiny.py runs --jobs Create -> Map -> GroupByKey ->
//     assert_that pipelines in a row in one process with
//     --runner=PrismRunner --prism_location=BIN, and times each job's
//     phases from the client and its LOOPBACK worker;
//   - Go: this program runs --jobs Create -> ParDo -> GroupByKey -> passert
//     pipelines in a row against a fresh server, LOOPBACK.
//
// For beam-runner it also reads the server's own "job timeline" of each
// job. Medians per phase are printed as markdown tables. Run it from the
// repository root: go run ./bench/cmd/perjob [--jobs=15].
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/beam-runner/beam-runner/bench"
)

var (
	jobs      = flag.Int("jobs", 15, "tiny jobs in a row per runner and SDK")
	runners   = flag.String("runners", "beam-runner,prism", "job servers to compare")
	python    = flag.String("python", "python3", "Python interpreter with apache-beam")
	workDir   = flag.String("work_dir", ".work/perjob", "binaries and logs")
	skipBuild = flag.Bool("skip_build", false, "reuse the binaries in work_dir/bin")
	sdks      = flag.String("sdks", "python,go", "which SDKs' tiny jobs to run")
)

// clientPhases are tiny.py's phases, in the order a job goes through them.
var clientPhases = []string{"total", "client_before_prepare", "options_to_done", "options_rpc", "prepare", "stage", "run_rpc",
	"run_to_start_worker", "start_worker_to_register", "register_to_first_bundle", "start_worker_to_first_bundle", "bundles",
	"first_to_last_bundle", "bundles_busy", "between_bundles", "in_bundle_processor_get", "in_bundle_input_wait",
	"in_bundle_inputs", "in_bundle_after_inputs", "last_bundle_to_done", "done_to_return"}

func init() {
	beam.RegisterFunction(keyByMod)
	beam.RegisterFunction(sumValues)
}

func keyByMod(x int) (int, int) { return x % 3, x }

func sumValues(k int, vs func(*int) bool) (int, int) {
	s, v := 0, 0
	for vs(&v) {
		s += v
	}
	return k, s
}

func main() {
	flag.Parse()
	beam.Init()
	root, _ := os.Getwd()
	work, err := filepath.Abs(*workDir)
	if err == nil {
		err = os.MkdirAll(work, 0o755)
	}
	if err == nil && !*skipBuild {
		err = bench.Build(root, work, nil)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "perjob:", err)
		os.Exit(1)
	}
	names := strings.Split(*runners, ",")
	if strings.Contains(*sdks, "python") {
		if err := pythonRows(root, work, names); err != nil {
			fmt.Fprintln(os.Stderr, "perjob:", err)
			os.Exit(1)
		}
	}
	if strings.Contains(*sdks, "go") {
		if err := goRows(work, names); err != nil {
			fmt.Fprintln(os.Stderr, "perjob:", err)
			os.Exit(1)
		}
	}
}

// bin is a runner's binary in the work dir.
func bin(work, runner string) string { return filepath.Join(work, "bin", runner) }

func pythonRows(root, work string, names []string) error {
	client, server := map[string]bench.Phases{}, map[string]bench.Phases{}
	for _, r := range names {
		args := []string{filepath.Join(root, "bench/py/tiny.py"), "--jobs", fmt.Sprint(*jobs + 1), "--label", r,
			"--runner=PrismRunner", "--prism_location=" + bin(work, r)}
		if r == "beam-runner" {
			args = append(args, "--prism_log_level=debug")
		}
		cmd := exec.Command(*python, args...)
		var out bytes.Buffer
		cmd.Stdout = &out
		logPath := filepath.Join(work, "python-"+r+".log")
		if f, err := os.Create(logPath); err == nil {
			cmd.Stderr = f
			defer f.Close()
		}
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("tiny.py on %s: %v (log %s)", r, err, logPath)
		}
		run, err := bench.ParseTiny(&out)
		if err != nil {
			return fmt.Errorf("%s: %w", r, err)
		}
		client[r], _ = bench.MedianPhases(run.Client)
		server[r], _ = bench.MedianPhases(run.Server[min(1, len(run.Server)):])
	}
	fmt.Printf("\nPython, %d tiny jobs in a row in one process (the first, which starts the server, left out): medians in ms, as the client sees them\n\n", *jobs)
	bench.WritePhaseTable(os.Stdout, clientPhases, names, client)
	if s := server["beam-runner"]; len(s) > 0 {
		_, order := bench.MedianPhases([]bench.Phases{s})
		fmt.Printf("\nbeam-runner's own timeline of the same Python jobs (medians, ms)\n\n")
		bench.WritePhaseTable(os.Stdout, order, []string{"beam-runner"}, server)
	}
	return nil
}

func goRows(work string, names []string) error {
	walls, server := map[string]bench.Phases{}, map[string]bench.Phases{}
	for _, r := range names {
		logPath := filepath.Join(work, "go-"+r+".log")
		var extra []string
		if r == "beam-runner" {
			extra = []string{"--log_level=debug", "--log_kind=text"}
		}
		ctx := context.Background()
		srv, err := bench.StartServer(ctx, bin(work, r), logPath, append(extra, "--serve_http=false")...)
		if err != nil {
			return err
		}
		ts, err := runGoJobs(ctx, srv.Endpoint, *jobs+1)
		srv.Stop()
		if err != nil {
			return fmt.Errorf("%s: %w", r, err)
		}
		walls[r], _ = bench.MedianPhases(ts[1:])
		if f, err := os.Open(logPath); err == nil {
			tl := bench.ParseServerTimelines(f)
			f.Close()
			server[r], _ = bench.MedianPhases(tl[min(1, len(tl)):])
		}
	}
	fmt.Printf("\nGo, %d tiny jobs in a row against one server, LOOPBACK (the first left out): median wall time per job, ms\n\n", *jobs)
	bench.WritePhaseTable(os.Stdout, []string{"total"}, names, walls)
	if s := server["beam-runner"]; len(s) > 0 {
		_, order := bench.MedianPhases([]bench.Phases{s})
		fmt.Printf("\nbeam-runner's own timeline of the same Go jobs (medians, ms)\n\n")
		bench.WritePhaseTable(os.Stdout, order, []string{"beam-runner"}, server)
	}
	return nil
}

// runGoJobs runs n tiny Go pipelines one after the other on endpoint and
// returns each one's wall time.
func runGoJobs(ctx context.Context, endpoint string, n int) ([]bench.Phases, error) {
	*jobopts.Endpoint = endpoint
	if err := flag.Set("environment_type", "LOOPBACK"); err != nil {
		return nil, err
	}
	var out []bench.Phases
	for i := 0; i < n; i++ {
		p, s := beam.NewPipelineWithRoot()
		kv := beam.ParDo(s, keyByMod, beam.Create(s, 1, 2, 3, 4, 5, 6))
		sums := beam.ParDo(s, sumValues, beam.GroupByKey(s, kv))
		passert.Equals(s, beam.DropKey(s, sums), 9, 7, 5)
		jctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		t0 := time.Now()
		_, err := universal.Execute(jctx, p)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("go job %d: %w", i, err)
		}
		out = append(out, bench.Phases{"total": time.Since(t0).Seconds()})
	}
	return out, nil
}
