// Package gopipe makes the pipeline protos of Go SDK pipelines, as the Go
// SDK's portable runners do before they submit one, for the tests and
// checks that hand pipelines to the runner's parts or its job service.
package gopipe

import (
	"context"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
)

// Marshal is p's proto, its transforms in one environment of urn with
// config (an EXTERNAL environment's endpoint, a PROCESS one's JSON).
func Marshal(ctx context.Context, p *beam.Pipeline, urn, config string) (*pipepb.Pipeline, error) {
	edges, _, err := p.Build()
	if err != nil {
		return nil, err
	}
	env, err := graphx.CreateEnvironment(ctx, urn, func(context.Context) string { return config })
	if err != nil {
		return nil, err
	}
	return graphx.Marshal(edges, &graphx.Options{Environment: env})
}

// ForTest is Marshal into an EXTERNAL environment at an address nothing
// serves, for tests that plan or validate a pipeline without running it.
func ForTest(t testing.TB, p *beam.Pipeline) *pipepb.Pipeline {
	t.Helper()
	pb, err := Marshal(context.Background(), p, graphx.URNEnvExternal, "localhost:1")
	if err != nil {
		t.Fatal(err)
	}
	return pb
}
