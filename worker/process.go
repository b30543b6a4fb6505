package worker

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"

	"github.com/beam-runner/beam-runner/worker/sdkenv"
)

// localProcess decides how a PROCESS environment runs: nil to run its
// command, or its SDK prepared to run here (localSDKProcess).
func (l *Launcher) localProcess(ctx context.Context, envID string, e sdkenv.Env) (*localEnv, error) {
	img, ok := localSDKProcess(e)
	if !ok {
		if e.Command == "" {
			return nil, fmt.Errorf("process environment has no command (and no Python or Java SDK capability to run here instead)")
		}
		return nil, nil
	}
	var vars []string
	for k, v := range e.Vars {
		vars = append(vars, k+"="+v)
	}
	what := "a PROCESS environment without a command"
	if e.Command != "" {
		what = fmt.Sprintf("a PROCESS environment whose boot command %s is not here", e.Command)
	}
	return l.local(ctx, envID, e, img, what, fmt.Sprintf("%s SDK %s", img.SDK, img.Version), vars...)
}

// localSDKProcess reports whether a PROCESS environment of an SDK that
// runs here (its sdk_base capability; Python and Java) runs that SDK
// here: when it has no command (Python's --environment_type=PROCESS with
// no config), or when its command is an SDK container's boot
// (/opt/apache/beam/boot, as Java's PROCESS environments name it) that
// this machine does not have.
func localSDKProcess(e sdkenv.Env) (sdkenv.Image, bool) {
	if !e.HasBaseImage || !runtimes[e.BaseImage.SDK].process {
		return sdkenv.Image{}, false
	}
	if e.Command == "" {
		return e.BaseImage, true
	}
	if filepath.Base(e.Command) != "boot" {
		return sdkenv.Image{}, false
	}
	_, err := exec.LookPath(e.Command)
	return e.BaseImage, err != nil
}
