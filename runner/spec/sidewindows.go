package spec

import (
	"fmt"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/engine"
	"github.com/beam-runner/beam-runner/runner/plan"
	"google.golang.org/protobuf/proto"
)

// sideWindows lays out the windows of a stage's side inputs for the
// engine, which then takes a streaming stage's elements as their side
// input windows complete. A WindowFn it does not know (an SDK's own)
// leaves the side input out: the engine waits for it to be complete.
func (b builder) sideWindows(sides []string) (map[string]engine.SideWindowFn, error) {
	out := map[string]engine.SideWindowFn{}
	for _, pc := range sides {
		ws := b.pl.Components.GetWindowingStrategies()[b.pl.Components.GetPcollections()[pc].GetWindowingStrategyId()]
		fn, err := sideWindowFn(ws.GetWindowFn())
		if err != nil {
			return nil, fmt.Errorf("side input %q: %w", pc, err)
		}
		if fn.Kind != engine.SideWindowsOther {
			fn.Lateness = ws.GetAllowedLateness()
			out[pc] = fn
		}
	}
	return out, nil
}

// sideWindowFn reads Beam's standard WindowFns.
func sideWindowFn(fn *pipepb.FunctionSpec) (engine.SideWindowFn, error) {
	switch fn.GetUrn() {
	case plan.URNGlobalWindows:
		return engine.SideWindowFn{Kind: engine.SideWindowsGlobal}, nil
	case plan.URNFixedWindows:
		var p pipepb.FixedWindowsPayload
		if err := proto.Unmarshal(fn.GetPayload(), &p); err != nil {
			return engine.SideWindowFn{}, fmt.Errorf("malformed FixedWindowsPayload: %v", err)
		}
		return engine.SideWindowFn{Kind: engine.SideWindowsFixed, Size: p.GetSize().AsDuration().Milliseconds(),
			Offset: p.GetOffset().AsTime().UnixMilli()}, nil
	case plan.URNSlidingWindows:
		var p pipepb.SlidingWindowsPayload
		if err := proto.Unmarshal(fn.GetPayload(), &p); err != nil {
			return engine.SideWindowFn{}, fmt.Errorf("malformed SlidingWindowsPayload: %v", err)
		}
		return engine.SideWindowFn{Kind: engine.SideWindowsSliding, Size: p.GetSize().AsDuration().Milliseconds(),
			Period: p.GetPeriod().AsDuration().Milliseconds(), Offset: p.GetOffset().AsTime().UnixMilli()}, nil
	}
	return engine.SideWindowFn{}, nil
}
