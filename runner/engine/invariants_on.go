//go:build invariants

package engine

// invariants turns on the engine's bookkeeping checks (invariants.go):
// `go test -tags invariants`, as `make race` runs them.
const invariants = true
