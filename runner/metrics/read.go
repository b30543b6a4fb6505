package metrics

import (
	"fmt"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
)

// Reading is one decoded MonitoringInfo, for display and export.
type Reading struct {
	URN    string            `json:"urn"`
	Labels map[string]string `json:"labels"`
	// Type is "counter", "distribution" or "gauge".
	Type string `json:"type"`
	// Value is a counter's sum or a gauge's latest value.
	Value float64 `json:"value"`
	// Count, Sum, Min and Max describe a distribution.
	Count float64 `json:"count,omitempty"`
	Sum   float64 `json:"sum,omitempty"`
	Min   float64 `json:"min,omitempty"`
	Max   float64 `json:"max,omitempty"`
}

// Read decodes a MonitoringInfo with one of the URNs the store merges.
func Read(mi *pipepb.MonitoringInfo) (Reading, error) {
	k, ok := kindOf[mi.GetUrn()]
	if !ok {
		return Reading{}, fmt.Errorf("metric URN %q is not supported", mi.GetUrn())
	}
	v, err := decode(k, mi.GetPayload())
	if err != nil {
		return Reading{}, fmt.Errorf("metric %q: %w", mi.GetUrn(), err)
	}
	r := Reading{URN: mi.GetUrn(), Labels: mi.GetLabels()}
	switch k {
	case kindSumInt64:
		r.Type, r.Value = "counter", float64(v.iSum)
	case kindSumDouble:
		r.Type, r.Value = "counter", v.fSum
	case kindLatestInt64:
		r.Type, r.Value = "gauge", float64(v.iSum)
	case kindLatestDouble:
		r.Type, r.Value = "gauge", v.fSum
	case kindDistInt64:
		r.Type, r.Count, r.Sum, r.Min, r.Max = "distribution", float64(v.count), float64(v.iSum), float64(v.iMin), float64(v.iMax)
	case kindDistDouble:
		r.Type, r.Count, r.Sum, r.Min, r.Max = "distribution", float64(v.count), v.fSum, v.fMin, v.fMax
	}
	return r, nil
}
