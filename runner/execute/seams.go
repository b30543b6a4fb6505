package execute

import (
	"context"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/harness"
	"github.com/beam-runner/beam-runner/runner/workers"
)

// harnesses are one environment's harnesses as the driver uses them
// (workers.Set): an interface, so that tests can run bundles without an
// SDK.
type harnesses interface {
	Process(ctx context.Context, b harness.Bundle) (harness.Result, error)
	ProcessPlaced(ctx context.Context, b harness.Bundle, p workers.Placement) (harness.Result, error)
	Split(ctx context.Context, key, source string, fraction float64, estimatedElements int64) (harness.SplitResult, error)
	Progress(ctx context.Context, key string) ([]*pipepb.MonitoringInfo, error)
	Finalize(ctx context.Context, key string) error
	Workers() int
}

// workerOps are the calls on the job's workers (workers.Pool) that a
// failed bundle needs, which can wait: they run off the driver goroutine
// (command), and tests can make them hang.
type workerOps interface {
	DescribeLoss(ctx context.Context, lost *harness.WorkerLost) string
	RestartLost(ctx context.Context, envID, failed string) error
	WorkerOutput(workerID string, output bool) string
}
