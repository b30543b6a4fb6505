package execute

import (
	"context"
	"fmt"
	"github.com/beam-runner/beam-runner/testsupport/gopipe"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/harness/init"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal/extworker"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"
	"github.com/beam-runner/beam-runner/runner/jobs"
	"google.golang.org/protobuf/types/known/structpb"
)

func init() {
	beam.RegisterFunction(failOn)
	beam.RegisterFunction(keyByLen)
	beam.RegisterFunction(countGroup)
	beam.RegisterFunction(formatCount)
}

func countGroup(k int, vs func(*string) bool) int {
	n := 0
	var v string
	for vs(&v) {
		n++
	}
	return k*10 + n
}

func formatCount(w string, n int) string { return fmt.Sprintf("%s:%d", w, n) }

func failOn(s string) (string, error) {
	if s == "boom" {
		return "", fmt.Errorf("user DoFn failed on %q", s)
	}
	return s, nil
}

func keyByLen(s string) (int, string) { return len(s), s }

// runPipeline executes p in-process against a loopback worker pool.
func runPipeline(t *testing.T, p *beam.Pipeline) error {
	t.Helper()
	return runPipelineWith(t, p, Options{}, map[string]any{})
}

// runPipelineWith is runPipeline with executor and job options.
func runPipelineWith(t *testing.T, p *beam.Pipeline, eopts Options, options map[string]any) error {
	t.Helper()
	return runResumed(t, p, eopts, options, nil)
}

// runResumed is runPipelineWith of a job resumed from checkpoint resume.
func runResumed(t *testing.T, p *beam.Pipeline, eopts Options, options map[string]any, resume []byte) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return runOn(ctx, New(eopts), p, &jobs.Job{ID: "test", Name: t.Name(), Resume: resume}, options)
}

// runOn runs p as job j (its pipeline and options filled in here) on e,
// with its own loopback worker pool. It may run in a goroutine of its
// own, so a failure to set the job up is returned, not fatal.
func runOn(ctx context.Context, e *Executor, p *beam.Pipeline, j *jobs.Job, options map[string]any) error {
	return runOnEdited(ctx, e, p, j, options, nil)
}

// runOnEdited is runOn with the pipeline proto changed by edit, if set,
// before the job is validated.
func runOnEdited(ctx context.Context, e *Executor, p *beam.Pipeline, j *jobs.Job, options map[string]any, edit func(*pipepb.Pipeline) error) error {
	pool, err := extworker.StartLoopback(ctx, 0)
	if err != nil {
		return fmt.Errorf("test setup: %w", err)
	}
	defer pool.Stop(ctx)
	if j.Pipeline, err = gopipe.Marshal(ctx, p, "beam:env:external:v1", pool.EnvironmentConfig(ctx)); err != nil {
		return fmt.Errorf("test setup: %w", err)
	}
	if edit != nil {
		if err := edit(j.Pipeline); err != nil {
			return fmt.Errorf("test setup: %w", err)
		}
	}
	if err := e.Validate(j.Pipeline); err != nil {
		return err
	}
	if j.Options, err = structpb.NewStruct(options); err != nil {
		return fmt.Errorf("test setup: %w", err)
	}
	return e.Execute(ctx, j)
}

func TestCountWords(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	words := beam.Create(s, "a", "b", "a", "c", "a")
	counts := stats.Count(s, words)
	formatted := beam.ParDo(s, formatCount, counts)
	passert.Equals(s, formatted, "a:3", "b:1", "c:1")
	if err := runPipeline(t, p); err != nil {
		t.Fatal(err)
	}
}

func TestGroupByKeyAndSideInput(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	words := beam.Create(s, "aa", "b", "cc", "ddd")
	grouped := beam.GroupByKey(s, beam.ParDo(s, keyByLen, words))
	sizes := beam.ParDo(s, countGroup, grouped)
	passert.Equals(s, sizes, 11, 22, 31)
	if err := runPipeline(t, p); err != nil {
		t.Fatal(err)
	}
}

func TestDoFnErrorFailsJob(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	beam.ParDo(s, failOn, beam.Create(s, "ok", "boom"))
	err := runPipeline(t, p)
	if err == nil || !strings.Contains(err.Error(), `user DoFn failed on "boom"`) {
		t.Fatalf("error = %v, want the DoFn's error", err)
	}
}

var _ = pipepb.IsBounded_BOUNDED
