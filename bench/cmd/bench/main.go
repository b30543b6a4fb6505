// Command bench runs Beam's Go load tests and wordcount on beam-runner,
// Prism and the Go direct runner, and Python workloads on beam-runner,
// Prism and Python's DirectRunner, and prints time and memory side by side.
// Run it from the repository root: go run ./bench/cmd/bench [--quick].
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"time"

	"github.com/beam-runner/beam-runner/bench"
)

func main() {
	c, err := parseFlags()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := bench.Prepare(c, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	results := bench.RunAll(ctx, c, os.Stderr)
	if err := bench.SaveResults(filepath.Join(c.WorkDir, "results.json"), results); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
	}
	fmt.Printf("\n%d records × %d B (key %d B), wordcount %d MiB, wordcount-600 %d MiB, %d round(s); wall times and peak RSS are medians over the rounds\n\n",
		c.Sizes.Records, c.Sizes.KeySize+c.Sizes.ValueSize, c.Sizes.KeySize, c.Sizes.WordcountMB, c.Sizes.LargeWordcountMB, c.Rounds)
	rep := bench.Summarize(results, c)
	bench.WriteReport(os.Stdout, rep)
	fmt.Println()
	bench.WritePayloadMemory(os.Stdout, rep)
}

func parseFlags() (*bench.Config, error) {
	s := bench.DefaultSizes
	quick := flag.Bool("quick", false, "smoke preset: 100k records, 10 MiB wordcount, 60 MiB wordcount-600, 1 round (explicit flags still win)")
	records := flag.Int64("records", s.Records, "synthetic records per load test")
	keySize := flag.Int64("key_size", s.KeySize, "key bytes per record")
	valueSize := flag.Int64("value_size", s.ValueSize, "value bytes per record")
	wcMB := flag.Int64("wordcount_mb", s.WordcountMB, "wordcount input size in MiB")
	largeMB := flag.Int64("large_wordcount_mb", s.LargeWordcountMB, "wordcount-600 input size in MiB (600; smaller only for smoke runs)")
	rounds := flag.Int("rounds", 3, "rounds; each runs every workload on every runner, and the report shows medians")
	workloads := flag.String("workloads", bench.DefaultWorkloads,
		"comma-separated: gbk,combine,pardo,sideinput,cogbk,wordcount,wordcount-600 (Go; wordcount-600 on beam-runner only), py-gbk,py-wordcount,py-wordcount-process,py-cpu,py-cpu-1w (Python)")
	cpuElements := flag.Int64("cpu_elements", s.CPUElements, "elements of the CPU-bound Python ParDo (py-cpu)")
	python := flag.String("python", "python3", "Python interpreter with apache-beam installed")
	runners := flag.String("runners", "beam-runner,prism,direct", "comma-separated runners: beam-runner, beam-runner-limited (with --memory_limit), prism, direct")
	workDir := flag.String("work_dir", ".work/bench", "binaries, input, outputs and logs")
	timeout := flag.Duration("timeout", 20*time.Minute, "limit per run")
	memLimit := flag.String("memory_limit", "64MiB", "--memory_limit of the beam-runner-limited runner")
	skipBuild := flag.Bool("skip_build", false, "reuse binaries already in work_dir/bin")
	flag.Parse()

	if *quick {
		applyQuick(records, wcMB, largeMB, cpuElements, rounds)
	}
	c := &bench.Config{
		Sizes: bench.Sizes{Records: *records, KeySize: *keySize, ValueSize: *valueSize,
			WordcountMB: *wcMB, LargeWordcountMB: *largeMB, CPUElements: *cpuElements},
		Rounds: *rounds, Timeout: *timeout, SkipBuild: *skipBuild, Python: *python,
		MemoryLimit: *memLimit,
	}
	var err error
	if c.Workloads, err = bench.SelectWorkloads(*workloads); err != nil {
		return nil, err
	}
	if c.Runners, err = bench.SelectRunners(*runners); err != nil {
		return nil, err
	}
	if c.RepoRoot, err = os.Getwd(); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(c.RepoRoot, "cmd", "beam-runner")); err != nil {
		return nil, fmt.Errorf("run from the repository root (no cmd/beam-runner here)")
	}
	c.WorkDir, err = filepath.Abs(*workDir)
	return c, err
}

// applyQuick sets the smoke sizes for every flag the user did not set.
func applyQuick(records, wcMB, largeMB, cpuElements *int64, rounds *int) {
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["records"] {
		*records = bench.QuickSizes.Records
	}
	if !set["wordcount_mb"] {
		*wcMB = bench.QuickSizes.WordcountMB
	}
	if !set["large_wordcount_mb"] {
		*largeMB = bench.QuickSizes.LargeWordcountMB
	}
	if !set["cpu_elements"] {
		*cpuElements = bench.QuickSizes.CPUElements
	}
	if !set["rounds"] {
		*rounds = 1
	}
}
