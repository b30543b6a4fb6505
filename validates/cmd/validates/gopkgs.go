package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/beam-runner/beam-runner/validates"
)

// Beam's Go package tests that run pipelines through ptest, so through
// whichever runner its flags name: go/passert runs every test and example
// of the passert package (Beam's assertions) against the server. Its
// examples compare the job's error text with what the SDK wrote, so they
// hold the runner to returning the SDK's error as it is.
const (
	passertCheck = "go/passert"
	passertPkg   = "github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	// passertWitness must be among the passes: a run that left it out
	// would not have checked the error text.
	passertWitness = "ExampleEqualsList_mismatch"
)

func goPackageChecks() []string { return []string{passertCheck} }

// runGoPackages runs the enabled Go package checks and records them.
func runGoPackages(ctx context.Context, cfg config, work, endpoint string, rep *report) {
	if cfg.disabled[passertCheck] {
		return
	}
	timed(passertCheck, func() error {
		rep.addChecks(passertCheck, []validates.Result{result(passertCheck, func() error {
			return runPassert(ctx, cfg, work, endpoint)
		})}, []string{passertCheck}, nil)
		return nil
	})
}

func runPassert(ctx context.Context, cfg config, work, endpoint string) error {
	bin := filepath.Join(work, "passert.test")
	if err := goCmd(ctx, "test", "-c", "-o", bin, passertPkg); err != nil {
		return err
	}
	g := goRun{bin: bin, endpoint: endpoint, timeout: cfg.checkTimeout, work: work}
	return everyPassed(g.run(ctx, "passert", ".", ""), passertWitness)
}

// everyPassed requires every result to pass, witness among them.
func everyPassed(res []validates.Result, witness string) error {
	var bad []string
	for _, r := range res {
		if r.Status != validates.Pass {
			bad = append(bad, fmt.Sprintf("%s: %s", r.Name, r.Status))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%d of %d tests did not pass: %s", len(bad), len(res), strings.Join(bad, "; "))
	}
	if !slices.ContainsFunc(res, func(r validates.Result) bool { return r.Name == witness }) {
		return fmt.Errorf("%s did not run (%d tests ran)", witness, len(res))
	}
	return nil
}
