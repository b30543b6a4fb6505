package jobs

import (
	"testing"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
)

// Python's PortableRunner accepts on its command line only the options the
// job service describes; the workers option must be among them.
func TestDescribePipelineOptionsListsWorkers(t *testing.T) {
	e := newEnv(t, &fakeExec{})
	resp, err := e.cli.DescribePipelineOptions(ctxT(t), &jobpb.DescribePipelineOptionsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range resp.GetOptions() {
		if o.GetName() == WorkersOption {
			if o.GetType() != jobpb.PipelineOptionType_INTEGER || o.GetDescription() == "" {
				t.Errorf("option %s: type %v, description %q", WorkersOption, o.GetType(), o.GetDescription())
			}
			return
		}
	}
	t.Fatalf("options %v lack %s", resp.GetOptions(), WorkersOption)
}
