package plan

import (
	"github.com/beam-runner/beam-runner/testsupport/gopipe"
	"os"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"
	"google.golang.org/protobuf/proto"

	"github.com/beam-runner/beam-runner/runner/stagekind"
)

// FuzzBuild feeds mutated pipeline protos to the planner, which sees them
// straight from clients: it may reject them, never panic.
func FuzzBuild(f *testing.F) {
	p, s := beam.NewPipelineWithRoot()
	words := beam.Create(s, "a", "b", "a")
	stats.Count(s, words)
	beam.ParDo(s, withSide, words, beam.SideInput{Input: beam.Create(s, 1)})
	pb := gopipe.ForTest(f, p)
	seed, err := proto.Marshal(pb)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	// A real Python streaming pipeline, with its pickled composites.
	py, err := os.ReadFile("testdata/python_streaming.pb")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(py)
	f.Fuzz(func(t *testing.T, b []byte) {
		var in pipepb.Pipeline
		if proto.Unmarshal(b, &in) != nil {
			return
		}
		pl, err := Build(&in)
		if err != nil {
			return
		}
		for _, st := range pl.Stages {
			if st.Kind == stagekind.SDK {
				pl.Descriptor(st, "localhost:1")
			}
		}
	})
}
