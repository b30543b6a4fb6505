package sdkenv

// Go is Beam's Go SDK: image apache/beam_go_sdk.
const Go SDK = "go"

func init() { Register(Spec{Name: Go, Tag: `go`}) }
