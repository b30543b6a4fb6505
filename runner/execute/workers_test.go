package execute

import (
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"
)

// A job with several harnesses per environment, and one with one, give
// the same answer; a bad option fails the job, naming it.
func TestWorkersOptionRunsJobs(t *testing.T) {
	for _, n := range []string{"1", "3"} {
		p, s := beam.NewPipelineWithRoot()
		words := beam.Create(s, "a", "b", "a", "c", "a")
		passert.Equals(s, beam.ParDo(s, formatCount, stats.Count(s, words)), "a:3", "b:1", "c:1")
		if err := runPipelineWith(t, p, Options{}, map[string]any{"beam:option:workers_per_environment:v1": n}); err != nil {
			t.Fatalf("%s workers: %v", n, err)
		}
	}
	p, s := beam.NewPipelineWithRoot()
	beam.Create(s, "a")
	err := runPipelineWith(t, p, Options{}, map[string]any{"beam:option:workers_per_environment:v1": "0"})
	if err == nil || !strings.Contains(err.Error(), "workers_per_environment") {
		t.Fatalf("error = %v, want one naming the option", err)
	}
}
