package jobs

import (
	"context"
	"strings"
	"testing"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Prepare refuses bad names and coder graphs with InvalidArgument, naming
// what is wrong, before the executor sees the pipeline.
func TestPrepareRefusesBadNamesAndCoderGraphs(t *testing.T) {
	e := newEnv(t, &fakeExec{
		validate: func(*pipepb.Pipeline) error { return nil },
		execute:  func(context.Context, *Job) error { return nil },
	})
	withCoders := func(cs map[string]*pipepb.Coder) *pipepb.Pipeline {
		p := pipeline()
		p.Components.Coders = cs
		return p
	}
	lp := func(comp string) *pipepb.Coder {
		return &pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: "beam:coder:length_prefix:v1"}, ComponentCoderIds: []string{comp}}
	}
	tests := []struct {
		name string
		req  *jobpb.PrepareJobRequest
		want string
	}{
		{"NUL in job name", &jobpb.PrepareJobRequest{Pipeline: pipeline(), JobName: "a\x00b"}, "NUL"},
		{"empty coder id", &jobpb.PrepareJobRequest{Pipeline: withCoders(map[string]*pipepb.Coder{"": lp("x")})}, "empty id"},
		{"NUL in coder id", &jobpb.PrepareJobRequest{Pipeline: withCoders(map[string]*pipepb.Coder{"c\x00": {}})}, "NUL"},
		{"self-referential length_prefix", &jobpb.PrepareJobRequest{Pipeline: withCoders(map[string]*pipepb.Coder{"lp": lp("lp")})}, `coder "lp" contains itself`},
		{"unknown component", &jobpb.PrepareJobRequest{Pipeline: withCoders(map[string]*pipepb.Coder{"lp": lp("nope")})}, `undefined component coder "nope"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.cli.Prepare(ctxT(t), tc.req)
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Prepare = %v, want InvalidArgument mentioning %q", err, tc.want)
			}
		})
	}
	if _, err := e.cli.Prepare(ctxT(t), &jobpb.PrepareJobRequest{Pipeline: pipeline(), JobName: "fine name"}); err != nil {
		t.Errorf("Prepare of a valid pipeline: %v", err)
	}
}

// Prepared pipelines not yet run are capped in bytes: past the cap Prepare
// gets RESOURCE_EXHAUSTED, and running a preparation frees its bytes.
func TestPreparedBytesCap(t *testing.T) {
	e := newEnv(t, &fakeExec{
		validate: func(*pipepb.Pipeline) error { return nil },
		execute:  func(context.Context, *Job) error { return nil },
	}, func(o *Options) { o.MaxPreparedBytes = 1 << 20 }) // room for two
	big := func() *pipepb.Pipeline {
		p := pipeline()
		p.Components.Transforms = map[string]*pipepb.PTransform{
			"t": {Spec: &pipepb.FunctionSpec{Urn: "beam:transform:impulse:v1", Payload: make([]byte, 400<<10)}},
		}
		return p
	}
	var ids []string
	for i := 0; i < 2; i++ {
		prep, err := e.cli.Prepare(ctxT(t), &jobpb.PrepareJobRequest{Pipeline: big()})
		if err != nil {
			t.Fatalf("Prepare %d under the cap: %v", i, err)
		}
		ids = append(ids, prep.GetPreparationId())
	}
	_, err := e.cli.Prepare(ctxT(t), &jobpb.PrepareJobRequest{Pipeline: big()})
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("Prepare past the cap = %v, want ResourceExhausted", err)
	}
	if _, err := e.cli.Run(ctxT(t), &jobpb.RunJobRequest{PreparationId: ids[0]}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.cli.Prepare(ctxT(t), &jobpb.PrepareJobRequest{Pipeline: big()}); err != nil {
		t.Errorf("Prepare after a Run freed room: %v", err)
	}
}
