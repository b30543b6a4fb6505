package worker

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/beam-runner/beam-runner/worker/sdkenv"
)

// startDocker runs the SDK container with host networking, so the loopback
// endpoints it is given are reachable from inside.
func startDocker(e sdkenv.Env, workerID string, ep Endpoints) (Handle, error) {
	image, err := dockerImage(e)
	if err != nil {
		return nil, err
	}
	args := DockerArgs(image, workerID, ep)
	p, err := runCmd(exec.Command("docker", args...), "docker environment")
	if err != nil {
		return nil, err
	}
	return &container{process: p, name: containerName(workerID)}, nil
}

// container stops its SDK container with docker kill: interrupting the
// docker client alone may leave the container running.
type container struct {
	*process
	name string
}

func (c *container) Stop(ctx context.Context) error {
	select {
	case <-c.Exited():
		return nil
	default:
	}
	exec.CommandContext(ctx, "docker", "kill", c.name).Run()
	return c.process.Stop(ctx)
}

func containerName(workerID string) string { return "beam-runner-" + workerID }

// DockerArgs is the docker command line for one SDK container.
func DockerArgs(image, workerID string, ep Endpoints) []string {
	args := []string{"run", "--rm", "--network=host", "--name=" + containerName(workerID), image}
	return append(args, bootArgs(workerID, ep)...)
}

// dockerProbe caches whether a Docker daemon answers: jobs start often,
// and asking takes up to dockerProbeTimeout.
var dockerProbe struct {
	sync.Mutex
	at  time.Time
	err error
}

const (
	dockerProbeTimeout = 3 * time.Second
	dockerProbeTTL     = 30 * time.Second
)

// dockerAnswers asks the docker client for the daemon's version.
func dockerAnswers(ctx context.Context) error {
	dockerProbe.Lock()
	defer dockerProbe.Unlock()
	if !dockerProbe.at.IsZero() && time.Since(dockerProbe.at) < dockerProbeTTL {
		return dockerProbe.err
	}
	ctx, cancel := context.WithTimeout(ctx, dockerProbeTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", "version", "--format", "{{.Server.Version}}").CombinedOutput()
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if i := strings.IndexByte(msg, '\n'); i > 0 {
			msg = msg[:i]
		}
		if msg == "" {
			msg = err.Error()
		}
		err = fmt.Errorf("no Docker daemon answers (%s)", msg)
	}
	dockerProbe.at, dockerProbe.err = time.Now(), err
	return err
}

// dockerImage is a DOCKER environment's container image.
func dockerImage(e sdkenv.Env) (string, error) {
	if e.Image == "" {
		return "", fmt.Errorf("docker environment has no container image")
	}
	return e.Image, nil
}

// dockerOrLocal decides how a DOCKER environment runs: nil for Docker, or
// the local SDK workers of a Beam SDK image. Any other image without
// Docker is an error naming the image.
func (l *Launcher) dockerOrLocal(ctx context.Context, envID string, e sdkenv.Env) (*localEnv, error) {
	image, err := dockerImage(e)
	if err != nil {
		return nil, err
	}
	if l.cfg.Containers == ContainersDocker {
		return nil, nil
	}
	img, isSDK := sdkenv.ParseImage(image)
	var why string
	if l.cfg.Containers == ContainersAuto {
		derr := l.cfg.Docker(ctx)
		if derr == nil {
			return nil, nil
		}
		if !isSDK {
			return nil, fmt.Errorf("image %q needs Docker, and %v; without Docker beam-runner runs only Beam's own Python, Go and Java SDK images (apache/beam_python3.X_sdk, apache/beam_go_sdk, apache/beam_javaNN_sdk), as local processes", image, derr)
		}
		why = derr.Error()
	} else {
		if !isSDK {
			return nil, nil // --sdk_containers=local covers Beam's images only
		}
		why = "--sdk_containers=local"
	}
	return l.local(ctx, envID, e, img, fmt.Sprintf("image %s", image), why)
}
