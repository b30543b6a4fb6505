package worker

import (
	"fmt"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/worker/sdkenv"
)

// PoolsEndpoint is the EXTERNAL environment endpoint that asks for the
// server's worker pools of the environment's SDK instead of naming one
// pool (Python: --environment_type=EXTERNAL --environment_config=worker_pools).
const PoolsEndpoint = "worker_pools"

// PoolTarget says whether an environment's workers may run on the
// server's worker pools, and of which SDK: a PROCESS environment of an
// SDK (the pool's boot takes the place of its command), one of Beam's own
// SDK images (which is what the pools run), or an EXTERNAL environment
// whose endpoint is PoolsEndpoint, which must run there (asks). Any other
// environment runs as it says.
func PoolTarget(env *pipepb.Environment) (sdk string, asks bool, err error) {
	e, err := sdkenv.Parse(env)
	if err != nil {
		return "", false, err
	}
	switch e.Kind {
	case sdkenv.Process:
		return string(e.SDK), false, nil
	case sdkenv.Docker:
		image, err := dockerImage(e)
		if err != nil {
			return "", false, err
		}
		img, ok := sdkenv.ParseImage(image)
		if !ok {
			return "", false, nil // the user's own image: not what pools run
		}
		return string(img.SDK), false, nil
	case sdkenv.External:
		if e.Endpoint != PoolsEndpoint {
			return "", false, nil
		}
		if e.SDK == "" {
			return "", true, fmt.Errorf("external environment asks for the server's worker pools (%s), but names no SDK (no beam:version:sdk_base capability)", PoolsEndpoint)
		}
		return string(e.SDK), true, nil
	}
	return "", false, nil
}
