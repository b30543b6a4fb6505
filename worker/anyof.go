package worker

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"
)

// localProcess reports whether a PROCESS environment runs the SDK here
// as local workers (localSDKProcess), and prepares it if so.
func (l *Launcher) localProcess(ctx context.Context, envID string, env *pipepb.Environment) (*localEnv, bool, error) {
	var pl pipepb.ProcessPayload
	if err := proto.Unmarshal(env.GetPayload(), &pl); err != nil {
		return nil, true, fmt.Errorf("process environment: bad payload: %w", err)
	}
	img, ok := localSDKProcess(&pl, env.GetCapabilities())
	if !ok {
		if pl.GetCommand() == "" {
			return nil, true, fmt.Errorf("process environment has no command (and no Python or Java SDK capability to run here instead)")
		}
		return nil, false, nil
	}
	var vars []string
	for k, v := range pl.GetEnv() {
		vars = append(vars, k+"="+v)
	}
	what := "a PROCESS environment without a command"
	if pl.GetCommand() != "" {
		what = fmt.Sprintf("a PROCESS environment whose boot command %s is not here", pl.GetCommand())
	}
	le, err := l.local(ctx, envID, env, img, what, fmt.Sprintf("%s SDK %s", img.Language, img.Version), vars...)
	return le, true, err
}

// localSDKProcess reports whether a PROCESS environment of a Python or
// Java SDK (its sdk_base capability) runs that SDK here: when it has no
// command (Python's --environment_type=PROCESS with no config), or when
// its command is an SDK container's boot (/opt/apache/beam/boot, as
// Java's PROCESS environments name it) that this machine does not have.
func localSDKProcess(pl *pipepb.ProcessPayload, caps []string) (SDKImage, bool) {
	img, ok := sdkFromBase(caps)
	if !ok || img.Language == "go" {
		return SDKImage{}, false
	}
	cmd := pl.GetCommand()
	if cmd == "" {
		return img, true
	}
	if filepath.Base(cmd) != "boot" {
		return SDKImage{}, false
	}
	_, err := exec.LookPath(cmd)
	return img, err != nil
}

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
	if env.GetUrn() != URNAnyOf {
		return env, "", nil
	}
	var pl pipepb.AnyOfEnvironmentPayload
	if err := proto.Unmarshal(env.GetPayload(), &pl); err != nil {
		return nil, "", fmt.Errorf("environment %q: bad anyof payload: %w", envID, err)
	}
	var cs []choice
	for i, alt := range pl.GetEnvironments() {
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
	switch env.GetUrn() {
	case URNExternal:
		c.rank = rankServing
		var pl pipepb.ExternalPayload
		if err := proto.Unmarshal(env.GetPayload(), &pl); err != nil || pl.GetEndpoint().GetUrl() == "" {
			c.why = "no worker pool endpoint"
		} else if err := answers(ctx, pl.GetEndpoint().GetUrl()); err != nil {
			c.why = err.Error()
		}
	case URNProcess:
		c.rank = rankProcess
		var pl pipepb.ProcessPayload
		if err := proto.Unmarshal(env.GetPayload(), &pl); err != nil {
			c.why = "bad payload"
		} else if _, ok := localSDKProcess(&pl, env.GetCapabilities()); ok {
			// runs the SDK here
		} else if pl.GetCommand() == "" {
			c.why = "no command"
		} else if _, err := exec.LookPath(pl.GetCommand()); err != nil {
			c.why = fmt.Sprintf("command %q not found", pl.GetCommand())
		}
	case URNDocker:
		c.rank = rankDocker
		c.why = l.dockerStartable(ctx, env)
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
func (l *Launcher) dockerStartable(ctx context.Context, env *pipepb.Environment) string {
	image, err := dockerImage(env)
	if err != nil {
		return "no container image"
	}
	if l.cfg.Containers != ContainersLocal && l.cfg.Docker(ctx) == nil {
		return ""
	}
	if _, ok := ParseSDKImage(image); ok && l.cfg.Containers != ContainersDocker {
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

// describeEnv names an environment for messages.
func describeEnv(env *pipepb.Environment) string {
	switch env.GetUrn() {
	case URNExternal:
		var pl pipepb.ExternalPayload
		proto.Unmarshal(env.GetPayload(), &pl)
		return "EXTERNAL worker pool " + pl.GetEndpoint().GetUrl()
	case URNProcess:
		var pl pipepb.ProcessPayload
		proto.Unmarshal(env.GetPayload(), &pl)
		if img, ok := localSDKProcess(&pl, env.GetCapabilities()); ok {
			return fmt.Sprintf("PROCESS (local %s SDK %s)", img.Language, img.Version)
		}
		return "PROCESS " + pl.GetCommand()
	case URNDocker:
		var pl pipepb.DockerPayload
		proto.Unmarshal(env.GetPayload(), &pl)
		return "DOCKER " + pl.GetContainerImage()
	}
	return env.GetUrn()
}
