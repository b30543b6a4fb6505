package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/beam-runner/beam-runner/validates"
	"github.com/beam-runner/beam-runner/validates/lifecycle"
)

// Extra checks run after the suites, against the same server. Every enabled
// one is expected: failing, or not running at all, fails the run.
const (
	wordcountCheck    = "wordcount"
	wordcountEnvCheck = "wordcount-default-env"
)

// checkNames lists every extra check, as -disable names them.
func checkNames() []string {
	names := append([]string{wordcountCheck, wordcountEnvCheck}, differentialChecks()...)
	names = append(names, pyHotKeyCheck)
	names = append(names, xlangChecks()...)
	names = append(names, goPackageChecks()...)
	names = append(names, windowingChecks()...)
	names = append(names, beamTestChecks()...)
	names = append(names, javaCheck, javaNRCheck)
	for _, c := range lifecycle.Checks() {
		names = append(names, "lifecycle/"+c.Name)
	}
	return names
}

// parseDisable checks the -disable list against the known check names, so
// a typo does not silently leave a check enabled.
func parseDisable(s string) (map[string]bool, error) {
	known := map[string]bool{}
	for _, n := range checkNames() {
		known[n] = true
	}
	off := map[string]bool{}
	for _, n := range splitAlso(s) {
		if n == "lifecycle" {
			for _, c := range lifecycle.Checks() {
				off["lifecycle/"+c.Name] = true
			}
			continue
		}
		if !known[n] {
			return nil, fmt.Errorf("-disable: unknown check %q (known: lifecycle %s)", n, strings.Join(checkNames(), " "))
		}
		off[n] = true
	}
	return off, nil
}

// result runs one check and turns its error into a table row, printing why
// it failed.
func result(name string, f func() error) validates.Result {
	start := time.Now()
	fmt.Printf("=== CHECK %s\n", name)
	err := f()
	r := validates.Result{Name: name, Status: validates.Pass, Elapsed: time.Since(start)}
	if err != nil {
		r.Status, r.Why = validates.Fail, err.Error()
		fmt.Printf("--- FAIL: %s (%s)\n    %s\n", name, r.Elapsed.Round(10*time.Millisecond), strings.ReplaceAll(err.Error(), "\n", "\n    "))
	} else {
		fmt.Printf("--- PASS: %s (%s)\n", name, r.Elapsed.Round(10*time.Millisecond))
	}
	return r
}

// runLifecycle runs the enabled lifecycle checks in order, each with its
// own time limit.
func runLifecycle(ctx context.Context, cfg config, work string, srv *server) ([]validates.Result, []string, error) {
	dir := filepath.Join(work, "lifecycle")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, err
	}
	sess, err := lifecycle.Open(ctx, lifecycle.Env{
		Endpoint: srv.endpoint, ServerPID: srv.proc.Pid(),
		WorkerStartTimeout: cfg.workerStartTimeout, Work: dir,
	})
	if err != nil {
		return nil, nil, err
	}
	defer sess.Close()
	var res []validates.Result
	var names []string
	for _, c := range lifecycle.Checks() {
		name := "lifecycle/" + c.Name
		if cfg.disabled[name] {
			continue
		}
		names = append(names, name)
		res = append(res, result(name, func() error {
			cctx, cancel := context.WithTimeout(ctx, cfg.checkTimeout)
			defer cancel()
			return c.Run(cctx, sess)
		}))
	}
	return res, names, nil
}

// addChecks records extra checks: all of names are expected.
func (r *report) addChecks(label string, res []validates.Result, names []string, err error) {
	if err != nil {
		r.problems = append(r.problems, label+": "+err.Error())
	}
	r.expected = append(r.expected, names...)
	r.results = append(r.results, res...)
}
