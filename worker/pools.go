package worker

import (
	"fmt"
	"strings"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"
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
	switch env.GetUrn() {
	case URNProcess:
		return sdkOf(env.GetCapabilities()), false, nil
	case URNDocker:
		image, err := dockerImage(env)
		if err != nil {
			return "", false, err
		}
		img, ok := ParseSDKImage(image)
		if !ok {
			return "", false, nil // the user's own image: not what pools run
		}
		return img.Language, false, nil
	case URNExternal:
		var pl pipepb.ExternalPayload
		if err := proto.Unmarshal(env.GetPayload(), &pl); err != nil {
			return "", false, fmt.Errorf("external environment: bad payload: %w", err)
		}
		if pl.GetEndpoint().GetUrl() != PoolsEndpoint {
			return "", false, nil
		}
		sdk := sdkOf(env.GetCapabilities())
		if sdk == "" {
			return "", true, fmt.Errorf("external environment asks for the server's worker pools (%s), but names no SDK (no beam:version:sdk_base capability)", PoolsEndpoint)
		}
		return sdk, true, nil
	}
	return "", false, nil
}

// sdkOf reads the SDK's language from an environment's sdk_base
// capability, e.g. "beam:version:sdk_base:apache/beam_python3.11_sdk:2.77.0"
// or "beam:version:sdk_base:go:apache/beam_go_sdk:2.77.0"; "" if none.
func sdkOf(caps []string) string {
	for _, c := range caps {
		rest, ok := strings.CutPrefix(c, "beam:version:sdk_base:")
		if !ok {
			continue
		}
		switch {
		case strings.Contains(rest, "beam_python"):
			return "python"
		case strings.Contains(rest, "beam_go"):
			return "go"
		case strings.Contains(rest, "beam_java"):
			return "java"
		}
	}
	return ""
}
