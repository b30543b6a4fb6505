package workers

import (
	"github.com/beam-runner/beam-runner/runner/jobs"
	"google.golang.org/protobuf/types/known/structpb"
)

// CheckOptions judges the job options that start and size a job's
// workers (worker_pools, workers_per_environment, the autoscaling
// options) and its streaming bundle time, as Start and the engine will
// read them, so that the job service can refuse a bad one at Prepare
// rather than fail the job when it starts.
func CheckOptions(opts *structpb.Struct, o Options) error {
	if _, err := jobPools(o.Pools, opts); err != nil {
		return err
	}
	if v, ok := jobs.Option(opts, jobs.WorkersOption); ok && v.GetKind() != nil {
		// Set, the option is read alone: no environment is needed.
		if _, err := jobs.PerEnv(opts, nil); err != nil {
			return err
		}
	}
	if _, err := jobs.JobScaling(opts, serverScaling(o)); err != nil {
		return err
	}
	_, err := jobs.StreamBundleTime(opts)
	return err
}

// serverScaling is the server's scaling flags, DefaultScaling when unset.
func serverScaling(o Options) jobs.Scaling {
	if o.Scaling.Mode == "" {
		return jobs.DefaultScaling()
	}
	return o.Scaling
}
