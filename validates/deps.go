//go:build tools

package validates

// The harness builds Beam's integration test binary with our go.mod, but no
// committed code imports it, so `go mod tidy` would drop the modules it needs
// (GCS, Dataflow, ...) and `go test -c` would then fail on missing go.sum
// entries. These imports, never compiled (the "tools" tag is never set),
// keep them in go.mod/go.sum. Keep in step with primitives' test imports.
import (
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/dataflow"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/flink"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/spark"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	_ "github.com/apache/beam/sdks/v2/go/test/integration/primitives"
)
