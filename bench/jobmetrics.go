package bench

import (
	"context"
	"fmt"
	"sort"
	"strings"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/encoding/protowire"
)

const urnElementCount = "beam:metric:element_count:v1"

// ElementCounts asks the server for the element count of every PCollection
// of its (only) job that the submitted pipeline names. The load tests log
// nothing but their runtime, so the job's own metrics are the record counts
// we can compare across runners. Runner-internal collections (lifted
// combines, SDF expansion) are dropped: each runner names its own.
func (s *Server) ElementCounts(ctx context.Context) (map[string]int64, error) {
	var counts map[string]int64
	err := s.withClient(ctx, func(ctx context.Context, c jobpb.JobServiceClient) error {
		jobs, err := c.GetJobs(ctx, &jobpb.GetJobsRequest{})
		if err != nil {
			return err
		}
		if len(jobs.GetJobInfo()) != 1 {
			return fmt.Errorf("want 1 job on a per-run server, found %d", len(jobs.GetJobInfo()))
		}
		id := jobs.GetJobInfo()[0].GetJobId()
		resp, err := c.GetJobMetrics(ctx, &jobpb.GetJobMetricsRequest{JobId: id})
		if err != nil {
			return err
		}
		p, err := c.GetPipeline(ctx, &jobpb.GetJobPipelineRequest{JobId: id})
		if err != nil {
			return err
		}
		counts = filterIDs(elementCounts(resp.GetMetrics()), pipelineIDs(p.GetPipeline()))
		return nil
	})
	return counts, err
}

// filterIDs keeps counts for ids in keep; an empty keep keeps all, so a
// server that returns no pipeline still gets compared, if noisily.
func filterIDs(counts map[string]int64, keep map[string]bool) map[string]int64 {
	if len(keep) == 0 {
		return counts
	}
	out := map[string]int64{}
	for id, n := range counts {
		if keep[id] {
			out[id] = n
		}
	}
	return out
}

// elementCounts sums element_count infos by PCollection, preferring
// committed values and falling back to attempted when a runner reports
// only those.
func elementCounts(m *jobpb.MetricResults) map[string]int64 {
	infos := m.GetCommitted()
	if len(infos) == 0 {
		infos = m.GetAttempted()
	}
	out := map[string]int64{}
	for _, mi := range infos {
		if mi.GetUrn() != urnElementCount {
			continue
		}
		v, n := protowire.ConsumeVarint(mi.GetPayload())
		if n < 0 {
			continue
		}
		out[mi.GetLabels()["PCOLLECTION"]] += int64(v)
	}
	return out
}

// CountsSignature renders counts as "id=n,..." sorted by id.
func CountsSignature(counts map[string]int64) string {
	var parts []string
	for id, n := range counts {
		parts = append(parts, fmt.Sprintf("%s=%d", id, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// pipelineIDs is the set of PCollection ids in a pipeline proto.
func pipelineIDs(p *pipepb.Pipeline) map[string]bool {
	ids := map[string]bool{}
	for id := range p.GetComponents().GetPcollections() {
		ids[id] = true
	}
	return ids
}
