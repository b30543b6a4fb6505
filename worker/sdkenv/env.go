// Package sdkenv reads what a pipeline's environment is, in one place: its
// kind (how its workers start: a worker pool, a process, a container, or
// the best of some alternatives) with its payload, and its SDK (Go,
// Python, Java: each registered by its own file). It is a leaf: the
// planner and the worker layer both read environments through it.
package sdkenv

import (
	"fmt"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"
)

// Environment URNs the runner can start.
const (
	URNExternal = "beam:env:external:v1"
	URNProcess  = "beam:env:process:v1"
	URNDocker   = "beam:env:docker:v1"
	URNAnyOf    = "beam:env:anyof:v1"
)

// Kind is how an environment's workers start.
type Kind int

const (
	// Unknown is a URN the runner does not start, or none (the runner's
	// own transforms).
	Unknown  Kind = iota
	External      // a worker pool's StartWorker (LOOPBACK too)
	Process       // a command
	Docker        // a container image
	AnyOf         // the best of its alternatives
)

func (k Kind) String() string {
	switch k {
	case External:
		return "EXTERNAL"
	case Process:
		return "PROCESS"
	case Docker:
		return "DOCKER"
	case AnyOf:
		return "ANYOF"
	}
	return "unknown"
}

// Env is an environment, parsed: its kind and payload, and its SDK.
type Env struct {
	Proto *pipepb.Environment
	Kind  Kind
	// SDK is the SDK its sdk_base capability names; "" if none.
	SDK SDK
	// BaseImage is the SDK image its sdk_base capability names, if
	// HasBaseImage.
	BaseImage    Image
	HasBaseImage bool

	Endpoint string            // External: the worker pool's address
	Params   map[string]string // External: the pool's parameters
	Command  string            // Process: the command
	Vars     map[string]string // Process: its environment variables
	Image    string            // Docker: the container image
	// Alternatives are AnyOf's choices, each to be parsed in its turn.
	Alternatives []*pipepb.Environment
}

// Parse reads env. A payload that does not parse is an error naming the
// kind; an unknown URN is Kind Unknown, not an error (whether it may run
// is the caller's decision).
func Parse(env *pipepb.Environment) (Env, error) {
	e := Env{Proto: env, Kind: KindOf(env.GetUrn())}
	e.SDK, e.BaseImage, e.HasBaseImage = fromCapabilities(env.GetCapabilities())
	var err error
	switch e.Kind {
	case External:
		var pl pipepb.ExternalPayload
		err = proto.Unmarshal(env.GetPayload(), &pl)
		e.Endpoint, e.Params = pl.GetEndpoint().GetUrl(), pl.GetParams()
	case Process:
		var pl pipepb.ProcessPayload
		err = proto.Unmarshal(env.GetPayload(), &pl)
		e.Command, e.Vars = pl.GetCommand(), pl.GetEnv()
	case Docker:
		var pl pipepb.DockerPayload
		err = proto.Unmarshal(env.GetPayload(), &pl)
		e.Image = pl.GetContainerImage()
	case AnyOf:
		var pl pipepb.AnyOfEnvironmentPayload
		err = proto.Unmarshal(env.GetPayload(), &pl)
		e.Alternatives = pl.GetEnvironments()
	}
	if err != nil {
		return Env{}, fmt.Errorf("%s environment: bad payload: %w", e.Kind, err)
	}
	return e, nil
}

// KindOf is the kind of an environment URN.
func KindOf(urn string) Kind {
	switch urn {
	case URNExternal:
		return External
	case URNProcess:
		return Process
	case URNDocker:
		return Docker
	case URNAnyOf:
		return AnyOf
	}
	return Unknown
}

// SDKOf is the SDK an environment's capabilities name ("" if none); the
// planner's question, which needs no payload.
func SDKOf(env *pipepb.Environment) SDK {
	sdk, _, _ := fromCapabilities(env.GetCapabilities())
	return sdk
}
