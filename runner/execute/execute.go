// Package execute runs a prepared job: it plans the pipeline, starts the
// environments, and drives the engine until the job ends.
package execute

import (
	"context"
	"errors"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/jobs"
)

// Options configure the executor.
type Options struct{}

// Executor implements jobs.Executor.
type Executor struct{ opts Options }

// New returns an executor.
func New(opts Options) *Executor { return &Executor{opts: opts} }

// Validate implements jobs.Executor.
func (e *Executor) Validate(p *pipepb.Pipeline) error { return nil }

// Execute implements jobs.Executor.
func (e *Executor) Execute(ctx context.Context, j *jobs.Job) error {
	return errors.New("execute: not yet wired")
}
