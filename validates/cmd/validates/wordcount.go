package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/beam-runner/beam-runner/internal/serverproc"
	"github.com/beam-runner/beam-runner/validates/differential"
	"github.com/beam-runner/beam-runner/validates/wordcount"
)

const wordcountPkg = "github.com/apache/beam/sdks/v2/go/examples/wordcount"

// checkWordcount runs Beam's Go wordcount on generated text with the direct
// runner and against the server, and requires identical counts.
func checkWordcount(ctx context.Context, cfg config, work, endpoint string) error {
	dir := filepath.Join(work, "wordcount")
	bin := filepath.Join(dir, "wordcount")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := goCmd(ctx, "build", "-o", bin, wordcountPkg); err != nil {
		return err
	}
	input, err := wordcountInput(dir, cfg)
	if err != nil {
		return err
	}
	direct, err := directWordcount(ctx, cfg, bin, filepath.Join(dir, "direct"), input)
	if err != nil {
		return fmt.Errorf("direct runner: %w", err)
	}
	ours, err := runWordcount(ctx, cfg, bin, filepath.Join(dir, "universal"), input,
		"--runner=universal", "--endpoint="+endpoint, "--environment_type=LOOPBACK")
	if err != nil {
		return fmt.Errorf("job server: %w", err)
	}
	if d := wordcount.Diff(direct, ours, 10); len(d) > 0 {
		return fmt.Errorf("counts differ from the direct runner's (%d words, %d total there; %d words, %d total here):\n%s",
			len(direct), direct.Total(), len(ours), ours.Total(), joinLines(d))
	}
	fmt.Printf("validates: wordcount: %d distinct words, %d in all: identical\n", len(direct), direct.Total())
	return nil
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
