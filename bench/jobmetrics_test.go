package bench

import (
	"testing"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/encoding/protowire"
)

func countInfo(pcoll string, n uint64) *pipepb.MonitoringInfo {
	return &pipepb.MonitoringInfo{
		Urn:     urnElementCount,
		Labels:  map[string]string{"PCOLLECTION": pcoll},
		Payload: protowire.AppendVarint(nil, n),
	}
}

func TestElementCountsSumsAndFilters(t *testing.T) {
	m := &jobpb.MetricResults{Committed: []*pipepb.MonitoringInfo{
		countInfo("n3", 600), countInfo("n3", 400), countInfo("n2/sized", 2),
		{Urn: "beam:metric:user:sum_int64:v1", Payload: protowire.AppendVarint(nil, 7)},
	}}
	p := &pipepb.Pipeline{Components: &pipepb.Components{Pcollections: map[string]*pipepb.PCollection{
		"n3": {}, "n4": {},
	}}}
	got := CountsSignature(filterIDs(elementCounts(m), pipelineIDs(p)))
	if got != "n3=1000" {
		t.Errorf("signature = %q, want n3=1000", got)
	}
}

func TestElementCountsFallsBackToAttempted(t *testing.T) {
	m := &jobpb.MetricResults{Attempted: []*pipepb.MonitoringInfo{countInfo("n1", 1)}}
	if got := CountsSignature(filterIDs(elementCounts(m), nil)); got != "n1=1" {
		t.Errorf("signature = %q", got)
	}
}
