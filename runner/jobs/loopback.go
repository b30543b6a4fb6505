package jobs

import (
	"strings"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/beam-runner/beam-runner/worker"
)

// LoopbackOptions reports whether a job's options ask for LOOPBACK
// workers, which run inside the submitting client. Each SDK names the
// option its own way: Python beam:option:environment_type:v1, Java
// beam:option:default_environment_type:v1, Go environment_type nested
// under go_options' "options".
func LoopbackOptions(o *structpb.Struct) bool { return hasLoopback(o.GetFields()) }

func hasLoopback(fields map[string]*structpb.Value) bool {
	for k, v := range fields {
		if strings.Contains(k, "environment_type") && strings.EqualFold(v.GetStringValue(), "LOOPBACK") {
			return true
		}
		if sv := v.GetStructValue(); sv != nil && hasLoopback(sv.GetFields()) {
			return true
		}
	}
	return false
}

// runsInClient reports whether, in a LOOPBACK job, env's workers run
// inside the submitting client: an EXTERNAL environment that does not ask
// for the server's worker pools. Such workers (Java's ExternalWorkerService,
// Python's and Go's in-process pools, an expansion service's
// --alsoStartLoopbackWorker) use the client's own classpath or
// interpreter and never retrieve artifacts, so staging their dependencies
// would copy the client's whole classpath to the server for nothing, on
// every job: about 0.4 s of each of Beam's Java test jobs.
func runsInClient(env *pipepb.Environment) bool {
	if env.GetUrn() != worker.URNExternal {
		return false
	}
	_, asks, err := worker.PoolTarget(env)
	return err == nil && !asks
}
