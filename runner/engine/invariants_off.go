//go:build !invariants

package engine

// invariants is off in ordinary builds: the checks in invariants.go walk
// every stage and bundle on each call. Build with -tags invariants to run
// them.
const invariants = false
