package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/beam-runner/beam-runner/testsupport/serverproc"
	"github.com/beam-runner/beam-runner/validates/differential"
	"github.com/beam-runner/beam-runner/validates/wordcount"
)

const wordcountPkg = "github.com/apache/beam/sdks/v2/go/examples/wordcount"

// wordcountCase is Beam's Go wordcount built once, its generated input,
// and the direct runner's counts (the oracle), shared by the wordcount
// checks.
type wordcountCase struct {
	bin, dir, input string
	direct          wordcount.Counts
}

func prepareWordcount(ctx context.Context, cfg config, work string) (*wordcountCase, error) {
	w := &wordcountCase{dir: filepath.Join(work, "wordcount")}
	w.bin = filepath.Join(w.dir, "wordcount")
	if err := os.MkdirAll(w.dir, 0o755); err != nil {
		return nil, err
	}
	if err := goCmd(ctx, "build", "-o", w.bin, wordcountPkg); err != nil {
		return nil, err
	}
	input, err := wordcountInput(w.dir, cfg)
	if err != nil {
		return nil, err
	}
	w.input = input
	if w.direct, err = directWordcount(ctx, cfg, w.bin, filepath.Join(w.dir, "direct"), input); err != nil {
		return nil, fmt.Errorf("direct runner: %w", err)
	}
	return w, nil
}

// check runs the wordcount against the server with runnerArgs into
// w.dir/name and requires the direct runner's counts.
func (w *wordcountCase) check(ctx context.Context, cfg config, name string, runnerArgs ...string) error {
	ours, err := runWordcount(ctx, cfg, w.bin, filepath.Join(w.dir, name), w.input, runnerArgs...)
	if err != nil {
		return fmt.Errorf("job server: %w", err)
	}
	if d := wordcount.Diff(w.direct, ours, 10); len(d) > 0 {
		return fmt.Errorf("counts differ from the direct runner's (%d words, %d total there; %d words, %d total here):\n%s",
			len(w.direct), w.direct.Total(), len(ours), ours.Total(), joinLines(d))
	}
	fmt.Printf("validates: wordcount %s: %d distinct words, %d in all: identical\n", name, len(w.direct), w.direct.Total())
	return nil
}

// wordcountDirs are the checks' output directories under the work dir's
// wordcount/ (which also holds the binary, named wordcount).
var wordcountDirs = map[string]string{wordcountCheck: "universal", wordcountEnvCheck: "default-env"}

// wordcountChecks are the wordcount on LOOPBACK workers and with the Go
// SDK's default environment (its container image, which the server runs
// as local worker processes from the staged binary).
func wordcountChecks(endpoint string) map[string][]string {
	return map[string][]string{
		wordcountCheck:    {"--runner=universal", "--endpoint=" + endpoint, "--environment_type=LOOPBACK"},
		wordcountEnvCheck: {"--runner=universal", "--endpoint=" + endpoint},
	}
}

// directWordcount runs the direct runner (the oracle) into dir, unless dir
// holds its output for the same binary and input already: on one core it
// takes longer than the server's run, and its answer does not change.
func directWordcount(ctx context.Context, cfg config, bin, dir, input string) (wordcount.Counts, error) {
	key, err := differential.Key(bin, []string{input}, "--runner=direct")
	if err != nil {
		return nil, err
	}
	ran, err := differential.Cached(dir, key, func(dir string) error {
		_, err := runWordcount(ctx, cfg, bin, dir, input, "--runner=direct")
		return err
	})
	if err != nil {
		return nil, err
	}
	if !ran {
		fmt.Printf("validates: wordcount: reusing the direct runner's output in %s\n", dir)
	}
	return wordcount.ReadOutput(filepath.Join(dir, "out"))
}

func wordcountInput(dir string, cfg config) (string, error) {
	start := time.Now()
	path, generated, err := wordcount.EnsureFile(dir, int64(cfg.wordcountMB)<<20, cfg.wordcountSeed)
	if err == nil && generated {
		fmt.Printf("validates: wordcount: generated %s in %s\n", path, time.Since(start).Round(10*time.Millisecond))
	}
	return path, err
}

// runWordcount runs the wordcount binary into a fresh dir and reads what
// it wrote. Its output goes to dir/log.
func runWordcount(ctx context.Context, cfg config, bin, dir, input string, runnerArgs ...string) (wordcount.Counts, error) {
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	ctx, cancel := context.WithTimeout(ctx, cfg.checkTimeout)
	defer cancel()
	args := append([]string{"--input=" + input, "--output=" + filepath.Join(dir, "out")}, runnerArgs...)
	cmd := serverproc.GroupCommand(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	start := time.Now()
	err = cmd.Run()
	fmt.Printf("validates: wordcount %v: %s\n", runnerArgs[0], time.Since(start).Round(10*time.Millisecond))
	if err != nil {
		return nil, fmt.Errorf("%w; log %s ends:\n%s", err, logPath, tailFile(logPath, 15))
	}
	return wordcount.ReadOutput(filepath.Join(dir, "out"))
}
