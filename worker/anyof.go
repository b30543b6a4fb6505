package worker

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"time"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/worker/sdkenv"
)

// Alternative ranks: lower is better. A worker that is already serving
// costs nothing to use; a process costs a start; a container an image.
const (
	rankServing = iota
	rankProcess
	rankDocker
)

// choice is one anyof alternative and whether (and how well) it can start.
type choice struct {
	env  *pipepb.Environment
	rank int
	why  string // why it cannot start; "" if it can
}

// pick returns the index of the best startable choice (the first of the
// best rank), or -1.
func pick(cs []choice) int {
	best := -1
	for i, c := range cs {
		if c.why == "" && (best < 0 || c.rank < cs[best].rank) {
			best = i
		}
	}
	return best
}

// Resolve returns the environment to start for env: env itself, or, for
// beam:env:anyof:v1, the best alternative this server can start (an
// EXTERNAL worker pool that answers, then PROCESS, then DOCKER), with a
// note saying which was chosen and why.
func (l *Launcher) Resolve(ctx context.Context, envID string, env *pipepb.Environment) (*pipepb.Environment, string, error) {
	if sdkenv.KindOf(env.GetUrn()) != sdkenv.AnyOf {
		return env, "", nil
	}
	e, err := sdkenv.Parse(env)
	if err != nil {
		return nil, "", fmt.Errorf("environment %q: %w", envID, err)
	}
	var cs []choice
	for i, alt := range e.Alternatives {
		resolved, _, err := l.Resolve(ctx, fmt.Sprintf("%s/anyof/%d", envID, i), alt)
		if err != nil {
			cs = append(cs, choice{env: alt, why: err.Error()})
			continue
		}
		cs = append(cs, l.assess(ctx, resolved))
	}
	best := pick(cs)
	if best < 0 {
		var whys []string
		for _, c := range cs {
			whys = append(whys, describeEnv(c.env)+": "+c.why)
		}
		if len(whys) == 0 {
			whys = []string{"it has none"}
		}
		return nil, "", fmt.Errorf("environment %q (anyof): no alternative can start here: %s", envID, strings.Join(whys, "; "))
	}
	note := fmt.Sprintf("environment %q (anyof of %d): running %s", envID, len(cs), describeEnv(cs[best].env))
	for i, c := range cs {
		if i != best {
			state := "also possible"
			if c.why != "" {
				state = c.why
			}
			note += fmt.Sprintf("; not %s (%s)", describeEnv(c.env), state)
		}
	}
	return cs[best].env, note, nil
}

// assess ranks one (non-anyof) alternative.
func (l *Launcher) assess(ctx context.Context, env *pipepb.Environment) choice {
	c := choice{env: env}
	e, err := sdkenv.Parse(env)
	if err != nil {
		c.why = err.Error()
		return c
	}
	switch e.Kind {
	case sdkenv.External:
		c.rank = rankServing
		if e.Endpoint == "" {
			c.why = "no worker pool endpoint"
		} else if err := answers(ctx, e.Endpoint); err != nil {
			c.why = err.Error()
		}
	case sdkenv.Process:
		c.rank = rankProcess
		c.why = processStartable(e)
	case sdkenv.Docker:
		c.rank = rankDocker
		c.why = l.dockerStartable(ctx, e)
	default:
		c.why = "not an environment beam-runner starts"
	}
	if c.why == "" && hasDeferred(env) {
		// Staging keeps an alternative's deferred artifacts when its client
		// could not resolve them (the Go SDK, for anyof alternatives).
		c.why = "its artifacts were not staged (the client left them deferred)"
	}
	return c
}

// processStartable says why a PROCESS alternative cannot start, or "".
func processStartable(e sdkenv.Env) string {
	if _, ok := localSDKProcess(e); ok {
		return "" // runs the SDK here
	}
	if e.Command == "" {
		return "no command"
	}
	if _, err := exec.LookPath(e.Command); err != nil {
		return fmt.Sprintf("command %q not found", e.Command)
	}
	return ""
}

// hasDeferred reports whether env has a dependency still of type
// beam:artifact:type:deferred:v1.
func hasDeferred(env *pipepb.Environment) bool {
	for _, d := range env.GetDependencies() {
		if d.GetTypeUrn() == urnArtifactDeferred {
			return true
		}
	}
	return false
}

const urnArtifactDeferred = "beam:artifact:type:deferred:v1"

// dockerStartable says why a DOCKER alternative cannot start, or "".
func (l *Launcher) dockerStartable(ctx context.Context, e sdkenv.Env) string {
	image, err := dockerImage(e)
	if err != nil {
		return "no container image"
	}
	if l.cfg.Containers != ContainersLocal && l.cfg.Docker(ctx) == nil {
		return ""
	}
	if _, ok := sdkenv.ParseImage(image); ok && l.cfg.Containers != ContainersDocker {
		return "" // runs as local SDK workers
	}
	return "no Docker daemon answers"
}

// answers reports whether something accepts connections at addr.
func answers(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("worker pool %s does not answer", addr)
	}
	conn.Close()
	return nil
}

// describeEnv names an environment for messages; one that does not
// parse says why.
func describeEnv(env *pipepb.Environment) string {
	e, err := sdkenv.Parse(env)
	if err != nil {
		return fmt.Sprintf("%s (%v)", env.GetUrn(), err)
	}
	switch e.Kind {
	case sdkenv.External:
		return "EXTERNAL worker pool " + e.Endpoint
	case sdkenv.Process:
		if img, ok := localSDKProcess(e); ok {
			return fmt.Sprintf("PROCESS (local %s SDK %s)", img.SDK, img.Version)
		}
		return "PROCESS " + e.Command
	case sdkenv.Docker:
		return "DOCKER " + e.Image
	}
	return env.GetUrn()
}
