package artifacts

import (
	"fmt"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/worker/sdkenv"
	"google.golang.org/protobuf/proto"
)

// eachEnv calls f with every environment of p, the alternatives of
// beam:env:anyof:v1 environments included (keyed "id/anyof/i", nested
// ones "id/anyof/i/anyof/j"): whichever alternative the runner picks must
// have its dependencies staged.
func eachEnv(p *pipepb.Pipeline, f func(key string, env *pipepb.Environment)) {
	for id, env := range p.GetComponents().GetEnvironments() {
		walkEnv(id, env, f)
	}
}

func walkEnv(key string, env *pipepb.Environment, f func(string, *pipepb.Environment)) {
	f(key, env)
	e, err := sdkenv.Parse(env)
	if err != nil || e.Kind != sdkenv.AnyOf {
		return // a bad payload is refused where the runner picks an alternative
	}
	for i, alt := range e.Alternatives {
		walkEnv(fmt.Sprintf("%s/anyof/%d", key, i), alt, f)
	}
}

// applyEnv sets env's dependencies (and its alternatives', recursively)
// from d, rewriting anyof payloads in place.
func applyEnv(key string, env *pipepb.Environment, d Deps) {
	if deps, ok := d[key]; ok {
		env.Dependencies = cloneDeps(deps)
	}
	e, err := sdkenv.Parse(env)
	if err != nil || e.Kind != sdkenv.AnyOf {
		return
	}
	for i, alt := range e.Alternatives {
		applyEnv(fmt.Sprintf("%s/anyof/%d", key, i), alt, d)
	}
	if b, err := proto.Marshal(&pipepb.AnyOfEnvironmentPayload{Environments: e.Alternatives}); err == nil {
		env.Payload = b
	}
}
