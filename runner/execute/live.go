package execute

import (
	"bytes"
	"slices"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/coder"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/engine"
	"github.com/beam-runner/beam-runner/runner/jobs"
	"github.com/beam-runner/beam-runner/runner/metrics"
)

// Live statistics: the driver reports bundles, splits and watermarks to the
// job's jobs.Stats, which the web UI, /metrics and the CLI read. Only the
// driver goroutine calls these.

// publishStages describes the plan's stages to the job's statistics.
func (r *run) publishStages() {
	comps := r.plan.Components
	infos := make([]jobs.StageInfo, 0, len(r.plan.Stages))
	for _, s := range r.plan.Stages {
		in := jobs.StageInfo{ID: s.ID, Name: r.stageName(s), Kind: s.Kind.String(), Env: s.Env,
			Inputs: s.Inputs, Outputs: s.Outputs}
		for _, t := range s.Transforms {
			in.Transforms = append(in.Transforms, comps.GetTransforms()[t].GetUniqueName())
		}
		for _, si := range s.SideInputs {
			in.SideInputs = append(in.SideInputs, si.PColl)
		}
		for _, fs := range s.FlattenSinks {
			if !slices.Contains(in.Outputs, fs.To) {
				in.Outputs = append(in.Outputs, fs.To)
			}
		}
		infos = append(infos, in)
	}
	r.job.Stats().SetStages(infos)
}

// liveStarted records that a bundle was handed to a worker. A combiner
// tree's combine bundles count as bundles of their GroupByKey.
func (r *run) liveStarted(rec *inflight) {
	r.job.Stats().BundleStarted(statsStage(rec))
}

func statsStage(rec *inflight) string {
	if rec.ss.treeOf != "" {
		return rec.ss.treeOf
	}
	return rec.b.Stage
}

// liveFinished records a finished bundle: its latency, bytes, and the
// element counts its SDK reported per PCollection.
func (r *run) liveFinished(rec *inflight, d bundleDone) {
	ss := rec.ss
	res := jobs.BundleResult{Failed: d.err != nil, PCollections: elementCounts(d.res.Monitoring)}
	res.Duration = time.Since(rec.since)
	for _, c := range d.b.Input {
		res.BytesIn += int64(len(c))
	}
	for _, frames := range d.res.Outputs {
		for _, f := range frames {
			res.BytesOut += int64(len(f))
		}
	}
	if ss.treeOf != "" {
		// A combine's partial groups are no PCollection's elements.
		res.PCollections = nil
	}
	res.ElementsIn, res.ElementsOut = stageElements(ss, res.PCollections)
	r.job.Stats().BundleFinished(statsStage(rec), res)
}

// liveSplit counts a split of a running bundle that gave work back.
func (r *run) liveSplit(b engine.Bundle, sd splitDone) {
	if sd.err == nil && (sd.res.FirstResidual >= 0 || len(sd.res.Residuals) > 0) {
		r.job.Stats().Split(b.Stage)
	}
}

// liveSample publishes each stage's output watermark: the least of its
// outputs', or its input's for a stage that materialises nothing.
func (r *run) liveSample(eng *engine.Engine) {
	wm := make(map[string]int64, len(r.plan.Stages))
	for _, s := range r.plan.Stages {
		pcs := s.Outputs
		if len(pcs) == 0 {
			pcs = s.Inputs
		}
		for i, pc := range pcs {
			if w := eng.Watermark(pc); i == 0 || w < wm[s.ID] {
				wm[s.ID] = w
			}
		}
	}
	r.job.Stats().Sample(time.Now(), wm)
}

// liveEnd publishes the final watermarks once the driver has stopped;
// bundles abandoned by a failure or cancellation no longer count as running.
func (r *run) liveEnd(eng *engine.Engine) {
	r.liveSample(eng)
	r.job.Stats().Stopped()
}

// elementCounts reads the SDK's element_count metrics, by PCollection.
func elementCounts(infos []*pipepb.MonitoringInfo) map[string]int64 {
	out := map[string]int64{}
	for _, mi := range infos {
		if mi.GetUrn() != metrics.UrnElementCount {
			continue
		}
		n, err := coder.DecodeVarInt(bytes.NewReader(mi.GetPayload()))
		if err != nil {
			continue // a bad payload must not fail the job; the store skips it too
		}
		out[mi.GetLabels()["PCOLLECTION"]] += n
	}
	return out
}
