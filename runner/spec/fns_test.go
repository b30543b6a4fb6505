package spec

import (
	"context"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
)

// The DoFns of the pipelines these tests plan; nothing runs them.
func init() {
	beam.RegisterFunction(countGroup)
	beam.RegisterFunction(keyByLen)
	beam.RegisterFunction(emitOneKey)
	beam.RegisterFunction(sumLengths)
}

func countGroup(k int, vs func(*string) bool) int { return k }

func keyByLen(s string) (int, string) { return len(s), s }

func emitOneKey(_ []byte, emit func(int, string)) { emit(1, "v") }

func sumLengths(_ int, vs func(*string) bool) int { return 0 }

// marshalForTest turns p into its proto, in an EXTERNAL environment that
// nothing starts.
func marshalForTest(t *testing.T, p *beam.Pipeline) *pipepb.Pipeline {
	t.Helper()
	edges, _, err := p.Build()
	if err != nil {
		t.Fatal(err)
	}
	env, err := graphx.CreateEnvironment(context.Background(), "beam:env:external:v1", func(context.Context) string { return "localhost:1" })
	if err != nil {
		t.Fatal(err)
	}
	pb, err := graphx.Marshal(edges, &graphx.Options{Environment: env})
	if err != nil {
		t.Fatal(err)
	}
	return pb
}
