package engine

import (
	"strings"
	"testing"

	"github.com/beam-runner/beam-runner/testsupport/purity"
)

// TestBoundaryDeps keeps the engine pure: nothing it links may speak gRPC
// or the Fn API, so its state stays plain data the driver can snapshot.
func TestBoundaryDeps(t *testing.T) {
	purity.Deps(t, "./...", func(dep string) bool {
		return purity.SpeaksFnAPI(dep) || strings.HasPrefix(dep, "github.com/beam-runner/beam-runner/worker")
	})
}

// TestBoundaryCode checks the engine's own (non-test) sources: no I/O
// imports, no goroutines, no wall clock.
func TestBoundaryCode(t *testing.T) {
	purity.Code(t, []string{"*.go", "*/*.go"}, []string{"net", "os", "syscall"}, 10)
}
