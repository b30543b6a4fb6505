package sdkenv

// Go is Beam's Go SDK: image apache/beam_go_sdk.
const Go SDK = "go"

// The Go SDK (2.77) checkpoints inexactly: from a bundle's second element
// on, it may give up the element it is processing whole and process it
// still (execute.boundedCheckpoint).
func init() { Register(Spec{Name: Go, Tag: `go`, InexactCheckpoints: true}) }
