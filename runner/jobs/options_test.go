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

// Python accepts the autoscaling options on its command line only if
// the job service describes them, with the types JobScaling reads.
func TestDescribePipelineOptionsListsAutoscaling(t *testing.T) {
	e := newEnv(t, &fakeExec{})
	resp, err := e.cli.DescribePipelineOptions(ctxT(t), &jobpb.DescribePipelineOptionsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]jobpb.PipelineOptionType_Enum{}
	for _, o := range resp.GetOptions() {
		types[o.GetName()] = o.GetType()
	}
	for name, want := range map[string]jobpb.PipelineOptionType_Enum{
		AutoscalingOption: jobpb.PipelineOptionType_STRING, MinWorkersOption: jobpb.PipelineOptionType_INTEGER,
		MaxWorkersOption: jobpb.PipelineOptionType_INTEGER, AutoscalingIntervalOption: jobpb.PipelineOptionType_STRING,
		ScaleDownIntervalOption: jobpb.PipelineOptionType_STRING,
	} {
		if got, ok := types[name]; !ok || got != want {
			t.Errorf("option %s: described %v (%v), want type %v", name, got, ok, want)
		}
	}
}
