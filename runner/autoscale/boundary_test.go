package autoscale

import (
	"strings"
	"testing"

	"github.com/beam-runner/beam-runner/testsupport/purity"
)

// TestBoundaryDeps keeps the policy pure, as runner/engine's test does
// for the engine: nothing it links may speak gRPC or the Fn API, nor any
// other package of the module.
func TestBoundaryDeps(t *testing.T) {
	const self = "github.com/beam-runner/beam-runner/runner/autoscale"
	purity.Deps(t, ".", func(dep string) bool {
		return purity.SpeaksFnAPI(dep) || strings.HasPrefix(dep, "github.com/beam-runner/beam-runner/") && dep != self
	})
}

// TestBoundaryCode checks the package's own (non-test) sources: no I/O
// imports, no goroutines, and not even the time package: times come from
// the caller.
func TestBoundaryCode(t *testing.T) {
	purity.Code(t, []string{"*.go"}, []string{"net", "os", "syscall", "time"}, 5)
}
