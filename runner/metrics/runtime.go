package metrics

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/coder"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
)

// SDK-reported system metrics the runner reads for stage rates (they are
// not merged into the job's metrics).
const (
	UrnStartBundleMsecs   = "beam:metric:pardo_execution_time:start_bundle_msecs:v1"
	UrnProcessBundleMsecs = "beam:metric:pardo_execution_time:process_bundle_msecs:v1"
	UrnFinishBundleMsecs  = "beam:metric:pardo_execution_time:finish_bundle_msecs:v1"
	UrnTotalMsecs         = "beam:metric:ptransform_execution_time:total_msecs:v1"
	UrnWorkRemaining      = "beam:metric:ptransform_progress:remaining:v1"
	typeProgress          = "beam:metrics:progress:v1"
)

// BusyMs is a bundle's execution time so far, summed over its transforms:
// each transform's start, process and finish msecs, or its total msecs
// when it reports no phase (SDKs that send both report the total as the
// phases' sum, so both are never added). ok says whether the bundle
// reported any execution time at all.
func BusyMs(infos []*pipepb.MonitoringInfo) (ms int64, ok bool) {
	phases, totals := map[string]int64{}, map[string]int64{}
	for _, mi := range infos {
		var into map[string]int64
		switch mi.GetUrn() {
		case UrnStartBundleMsecs, UrnProcessBundleMsecs, UrnFinishBundleMsecs:
			into = phases
		case UrnTotalMsecs:
			into = totals
		default:
			continue
		}
		v, err := coder.DecodeVarInt(bytes.NewReader(mi.GetPayload()))
		if err != nil || v < 0 {
			continue // a bad payload must not fail the job
		}
		ok = true
		into[mi.GetLabels()["PTRANSFORM"]] += v
	}
	for t, v := range totals {
		if _, has := phases[t]; !has {
			ms += v
		}
	}
	for _, v := range phases {
		ms += v
	}
	return ms, ok
}

// WorkRemaining sums a bundle's splittable DoFns' remaining work
// (ptransform_progress:remaining, in work units the SDK chooses); ok is
// false if none reported.
func WorkRemaining(infos []*pipepb.MonitoringInfo) (remaining float64, ok bool) {
	for _, mi := range infos {
		if mi.GetUrn() != UrnWorkRemaining {
			continue
		}
		vs, err := progressValues(mi.GetPayload())
		if err != nil || len(vs) == 0 {
			continue
		}
		remaining += vs[0]
		ok = true
	}
	return remaining, ok
}

// progressValues decodes a progress payload: an iterable of doubles, as
// beam:coder:iterable:v1 writes it (a big-endian int32 count first).
func progressValues(p []byte) ([]float64, error) {
	if len(p) < 4 {
		return nil, fmt.Errorf("progress payload of %d bytes has no count", len(p))
	}
	n := int32(binary.BigEndian.Uint32(p))
	if n < 0 || int(n) > (len(p)-4)/8 {
		return nil, fmt.Errorf("progress payload counts %d doubles in %d bytes", n, len(p)-4)
	}
	out := make([]float64, n)
	for i := range out {
		out[i] = math.Float64frombits(binary.BigEndian.Uint64(p[4+8*i:]))
	}
	return out, nil
}

// Gauge is a runner-side gauge as a MonitoringInfo of Beam's latest_double
// type, for the Job API's metrics. Beam's clients leave it out of a
// pipeline result's metrics (Python and Java read only latest_int64
// gauges; Go needs a PTRANSFORM label, which labels must not have), so it
// never reads as a user metric.
func Gauge(urn string, labels map[string]string, atMs int64, v float64) *pipepb.MonitoringInfo {
	return &pipepb.MonitoringInfo{Urn: urn, Type: typeLatestDouble, Labels: labels,
		Payload: encode(value{kind: kindLatestDouble, ts: atMs, fSum: v})}
}
