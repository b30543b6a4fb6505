// Command elastic turns a run of the elastic benchmark (the JSON that
// `make elastic` records, validates/xlang/elastic_test.go) into its
// figures: it writes the plot as SVG and prints the per-step table and
// the scaling decisions as Markdown (docs/bench/elastic.md).
//
//	go run ./bench/cmd/elastic -run .work/elastic/run.json -svg docs/bench/elastic.svg
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/beam-runner/beam-runner/bench/elastic"
)

func main() {
	run := flag.String("run", ".work/elastic/run.json", "the run's JSON")
	svg := flag.String("svg", "", "write the plot here (none if empty)")
	flag.Parse()
	r, err := elastic.Load(*run)
	if err != nil {
		fmt.Fprintln(os.Stderr, "elastic:", err)
		os.Exit(1)
	}
	if *svg != "" {
		if err := os.WriteFile(*svg, []byte(elastic.SVG(r)), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "elastic:", err)
			os.Exit(1)
		}
	}
	steps, tot := elastic.Analyze(r)
	fmt.Printf("Run of %s: R=%d records/s, steps of %s, CPU %.1f ms and wait %.1f ms per record, %d hosts of %.2f core, %s.\n\n",
		r.Config.Date, r.Config.Rate, fmtSecs(r.Config.StepSeconds), r.Config.CPUMs, r.Config.WaitMs, r.Config.Hosts, r.Config.HostCores, r.Config.Flags)
	fmt.Print(elastic.Table(r, steps, tot))
	fmt.Printf("\nScaling decisions (pool environment %s):\n\n%s", r.Config.PoolEnv, elastic.Decisions(r))
}

func fmtSecs(s float64) string { return fmt.Sprintf("%.0f s", s) }
