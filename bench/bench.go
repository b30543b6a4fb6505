package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/beam-runner/beam-runner/internal/textclip"
)

// Prepare builds the binaries and writes the wordcount input, once.
func Prepare(c *Config, log io.Writer) error {
	for _, d := range []string{"bin", "logs", "out"} {
		if err := os.MkdirAll(filepath.Join(c.WorkDir, d), 0o755); err != nil {
			return err
		}
	}
	if !c.SkipBuild {
		fmt.Fprintln(log, "building beam-runner, prism and the pipeline programs…")
		if err := Build(c.RepoRoot, c.WorkDir, c.Workloads); err != nil {
			return err
		}
	}
	if err := checkBinaries(c); err != nil {
		return err
	}
	return prepareInputs(c, log)
}

// prepareInputs writes each text a workload reads (once per size) and
// counts the words of those checked against their input.
func prepareInputs(c *Config, log io.Writer) error {
	written := map[int64]bool{}
	for _, w := range c.Workloads {
		mb := w.TextMB(c.Sizes)
		if !w.Text || written[mb] {
			continue
		}
		written[mb] = true
		fmt.Fprintf(log, "generating %d MiB of wordcount text…\n", mb)
		if err := GenerateText(TextPath(c.WorkDir, mb), mb); err != nil {
			return err
		}
	}
	for _, w := range c.Workloads {
		if !w.Large {
			continue
		}
		fmt.Fprintf(log, "counting the words of %s's input…\n", w.Name)
		sig, err := InputWordcountSignature(TextPath(c.WorkDir, w.TextMB(c.Sizes)))
		if err != nil {
			return fmt.Errorf("counting %s's input: %w", w.Name, err)
		}
		if c.Expected == nil {
			c.Expected = map[string]string{}
		}
		c.Expected[w.Name] = sig
	}
	return nil
}

// checkBinaries fails before any run when a binary is missing (say,
// --skip_build with a workload never built), rather than once per run.
func checkBinaries(c *Config) error {
	var paths []string
	for _, r := range c.Runners {
		if r.Server {
			paths = append(paths, filepath.Join(c.WorkDir, "bin", r.BinaryName()))
		}
	}
	for _, w := range c.Workloads {
		if !w.Python {
			paths = append(paths, w.Binary(c.WorkDir))
		}
	}
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("missing binary (build without --skip_build): %w", err)
		}
	}
	return nil
}

// RunAll runs every workload on every runner, round after round. Runners
// alternate within a round, and the order rotates each round, so slow drift
// on the machine (thermal, page cache, neighbours) spreads over all runners.
func RunAll(ctx context.Context, c *Config, log io.Writer) []Result {
	var all []Result
	for round := 1; round <= c.Rounds; round++ {
		for _, w := range c.Workloads {
			for i := range c.Runners {
				r := c.Runners[(i+round-1)%len(c.Runners)]
				if !w.RunsOn(r) {
					continue
				}
				res := RunOne(ctx, c, w, r, round)
				fmt.Fprintln(log, progressLine(res))
				all = append(all, res)
				if ctx.Err() != nil {
					return all
				}
			}
		}
	}
	return all
}

func progressLine(r Result) string {
	s := fmt.Sprintf("round %d %-13s %-19s %8s  server %7s  client %7s",
		r.Round, r.Workload, r.Runner, FormatDuration(r.Wall), FormatKB(r.ServerRSSKB), FormatKB(r.ClientRSSKB))
	if r.Err != "" {
		s += "  FAILED: " + textclip.Clip(r.Err, 200)
	}
	return s
}

// SaveResults keeps every run's raw numbers, signatures and errors, for
// digging deeper than the medians in the table.
func SaveResults(path string, results []Result) error {
	b, err := json.MarshalIndent(results, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
