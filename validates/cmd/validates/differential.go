package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/beam-runner/beam-runner/testsupport/pyrun"
	"github.com/beam-runner/beam-runner/testsupport/serverproc"
	"github.com/beam-runner/beam-runner/validates"
	"github.com/beam-runner/beam-runner/validates/differential"
	"github.com/beam-runner/beam-runner/validates/wordcount"
)

// Differential checks run a Python program on Python's DirectRunner (the
// oracle, whose output is cached per input in the work dir) and on the job
// server, and require the same output. The Go side's is the wordcount check.
const (
	pyWordcountCheck = "diff/py-wordcount"
	// The same wordcount with Python's default environment, the SDK
	// container, which the server runs as local worker processes.
	pyWordcountEnvCheck = "diff/py-wordcount-default-env"
	pySplitsCheck       = "diff/py-splits"

	pyWordcountModule = "apache_beam.examples.wordcount"
	pySplitsScript    = "validates/pydiff/splits_pipeline.py"
	pySplitsFiles     = 8
)

// diffFlags are registered here, not in parseFlags, to keep this file's
// hook into the harness to one call.
var diffFlags struct {
	pyWordcountMB int
	splitsRecords int
}

func init() {
	flag.IntVar(&diffFlags.pyWordcountMB, "py_wordcount_mb", 60,
		"size in MiB of the input of Python's wordcount example (generated like -wordcount_mb's)")
	flag.IntVar(&diffFlags.splitsRecords, "py_splits_records", 1_000_000,
		"records read by the Python GroupByKey/CoGroupByKey/side-input pipeline, over "+fmt.Sprint(pySplitsFiles)+" files")
}

func differentialChecks() []string {
	return []string{pyWordcountCheck, pyWordcountEnvCheck, pySplitsCheck}
}

// runDifferential runs the enabled differential checks and records them.
func runDifferential(ctx context.Context, cfg config, work string, endpoint string, rep *report) {
	d := diffRun{cfg: cfg, dir: filepath.Join(work, "pydiff"), endpoint: endpoint}
	if err := os.MkdirAll(d.dir, 0o755); err != nil {
		rep.problems = append(rep.problems, "differential: "+err.Error())
		return
	}
	checks := map[string]func(context.Context) error{
		pyWordcountCheck: func(ctx context.Context) error {
			return d.pyWordcount(ctx, pyWordcountCheck, "wordcount-server", d.serverArgs())
		},
		pyWordcountEnvCheck: func(ctx context.Context) error {
			return d.pyWordcount(ctx, pyWordcountEnvCheck, "wordcount-default-env", d.serverArgs()[:2])
		},
		pySplitsCheck: d.pySplits,
	}
	for _, name := range differentialChecks() {
		if cfg.disabled[name] {
			continue
		}
		timed(name, func() error {
			rep.addChecks(name, []validates.Result{result(name, func() error { return checks[name](ctx) })}, []string{name}, nil)
			return nil
		})
	}
}

type diffRun struct {
	cfg      config
	dir      string
	endpoint string
}

// serverArgs submit a Python pipeline to the job server under test; the
// first two alone leave the SDK's default environment.
func (d diffRun) serverArgs() []string {
	return []string{"--runner=PortableRunner", "--job_endpoint=" + d.endpoint, "--environment_type=LOOPBACK"}
}

var directArgs = []string{"--runner=DirectRunner"}

// pyWordcount runs Beam's Python wordcount example on generated text, on
// the server with serverArgs, into outName.
func (d diffRun) pyWordcount(ctx context.Context, check, outName string, serverArgs []string) error {
	input, _, err := wordcount.EnsureFile(d.dir, int64(diffFlags.pyWordcountMB)<<20, d.cfg.wordcountSeed)
	if err != nil {
		return err
	}
	args := []string{"-m", pyWordcountModule, "--input=" + input}
	oracle, err := d.oracle(ctx, "wordcount-direct", "", []string{input}, args)
	if err != nil {
		return err
	}
	want, err := wordcount.ReadOutput(oracle)
	if err != nil {
		return err
	}
	if n, err := differential.CountTokens(input, differential.PythonWordByte); err != nil || n != want.Total() {
		return fmt.Errorf("the DirectRunner counted %d words, the input has %d (%v): the oracle is wrong", want.Total(), n, err)
	}
	out := filepath.Join(d.dir, outName)
	if err := d.python(ctx, out, append(args, serverArgs...)); err != nil {
		return fmt.Errorf("job server: %w", err)
	}
	got, err := wordcount.ReadOutput(filepath.Join(out, "out"))
	if err != nil {
		return err
	}
	if diff := wordcount.Diff(want, got, 10); len(diff) > 0 {
		return fmt.Errorf("counts differ from the DirectRunner's (%d words, %d total there; %d words, %d total here):\n%s",
			len(want), want.Total(), len(got), got.Total(), joinLines(diff))
	}
	fmt.Printf("validates: %s: %d distinct words, %d in all: identical\n", check, len(want), want.Total())
	return nil
}

// pySplits runs the GroupByKey/CoGroupByKey/side-input/CombinePerKey
// pipeline over several files, which the runner splits.
func (d diffRun) pySplits(ctx context.Context) error {
	script, err := filepath.Abs(pySplitsScript)
	if err != nil {
		return err
	}
	input, err := d.splitsInput(ctx, script)
	if err != nil {
		return err
	}
	args := []string{script, "run", "--input=" + input}
	inputs, _ := filepath.Glob(input)
	oracle, err := d.oracle(ctx, "splits-direct", script, inputs, args)
	if err != nil {
		return err
	}
	want, err := differential.ReadLines(oracle)
	if err != nil {
		return err
	}
	if line := fmt.Sprintf("records\t%d", diffFlags.splitsRecords); !slices.Contains(want, line) {
		return fmt.Errorf("the DirectRunner's output lacks %q: the oracle is wrong", line)
	}
	out := filepath.Join(d.dir, "splits-server")
	if err := d.python(ctx, out, append(args, d.serverArgs()...)); err != nil {
		return fmt.Errorf("job server: %w", err)
	}
	got, err := differential.ReadLines(filepath.Join(out, "out"))
	if err != nil {
		return err
	}
	if diff := differential.DiffLines(want, got, 10); len(diff) > 0 {
		return fmt.Errorf("output differs from the DirectRunner's (- DirectRunner only, + job server only):\n%s", joinLines(diff))
	}
	fmt.Printf("validates: %s: %d records, %d output lines: identical\n", pySplitsCheck, diffFlags.splitsRecords, len(want))
	return nil
}

// splitsInput generates the pipeline's input files once per size.
func (d diffRun) splitsInput(ctx context.Context, script string) (string, error) {
	records := fmt.Sprint(diffFlags.splitsRecords)
	dir := filepath.Join(d.dir, "splits-input-"+records)
	key, err := differential.Key(script, nil, records, fmt.Sprint(pySplitsFiles))
	if err != nil {
		return "", err
	}
	_, err = differential.Cached(dir, key, func(dir string) error {
		return d.python(ctx, "", []string{script, "gen", "--dir=" + dir, "--records=" + records,
			"--files=" + fmt.Sprint(pySplitsFiles)})
	})
	return filepath.Join(dir, "part-*"), err
}

// oracle runs args on the DirectRunner into work/name unless a run for the
// same program, inputs and args is there already, and returns the output
// prefix.
func (d diffRun) oracle(ctx context.Context, name, program string, inputs, args []string) (string, error) {
	args = append(args, directArgs...)
	// The interpreter stands for the installed Beam (pinned by setup.sh).
	key, err := differential.Key(program, inputs, append([]string{d.cfg.pythonBin}, args...)...)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(d.dir, name)
	ran, err := differential.Cached(dir, key, func(dir string) error { return d.python(ctx, dir, args) })
	if err != nil {
		return "", fmt.Errorf("DirectRunner: %w", err)
	}
	if !ran {
		fmt.Printf("validates: reusing the DirectRunner's output in %s\n", dir)
	}
	return filepath.Join(dir, "out"), nil
}

// python runs the interpreter with args; with outDir set, into a fresh
// outDir with --output=outDir/out and the log in outDir/log.
func (d diffRun) python(ctx context.Context, outDir string, args []string) error {
	logPath := filepath.Join(d.dir, "gen.log")
	if outDir != "" {
		if err := os.RemoveAll(outDir); err != nil {
			return err
		}
		if err := os.MkdirAll(outDir, 0o755); err != nil {
			return err
		}
		args = append(args, "--output="+filepath.Join(outDir, "out"))
		logPath = filepath.Join(outDir, "log")
	}
	return runPythonClient(ctx, d.cfg.checkTimeout, logPath, d.cfg.pythonBin, args...)
}

// runPythonClient runs a Python Beam client with runLogged, through pyrun
// (written beside logPath): the client leaves with os._exit once it
// returns, so it cannot hang at exit after its job has ended.
func runPythonClient(ctx context.Context, limit time.Duration, logPath, python string, args ...string) error {
	run, err := pyrun.Write(filepath.Dir(logPath))
	if err != nil {
		return err
	}
	return runLogged(ctx, limit, logPath, python, append([]string{run}, args...)...)
}

// runLogged runs bin with its output in logPath, in its own process group
// so a timeout kills its workers too.
func runLogged(ctx context.Context, limit time.Duration, logPath, bin string, args ...string) error {
	logf, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logf.Close()
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	cmd := serverproc.GroupCommand(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	start := time.Now()
	err = cmd.Run()
	fmt.Printf("validates: %s (log %s): %s\n", filepath.Base(bin), logPath, time.Since(start).Round(10*time.Millisecond))
	if err != nil {
		return fmt.Errorf("%w; log %s ends:\n%s", err, logPath, tailFile(logPath, 15))
	}
	return nil
}
