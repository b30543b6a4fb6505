package execute

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/beam-runner/beam-runner/runner/autoscale"
)

// savedScaling is the autoscaler's memory as a checkpoint keeps it: the
// policy's state (when each environment last changed, the scale-ups that
// did not help, the sources' last backlog) and each environment's
// workers as last decided. A job resumed from it starts at those workers
// and keeps the stability rules' clocks, rather than start afresh: a
// restart must not undo a decision, nor let a scale-down through early.
type savedScaling struct {
	State   autoscale.State `json:"state"`
	Workers map[string]int  `json:"workers"`
}

// scaleSnapshot is the autoscaler's memory now, for a checkpoint; nil
// when the job does not scale. Driver goroutine only.
func (d *driver) scaleSnapshot() []byte {
	if d.scale == nil {
		return nil
	}
	sv := savedScaling{State: d.scale.policy.State, Workers: map[string]int{}}
	for _, env := range d.scale.envs {
		sv.Workers[env] = d.r.pool.Harnesses(env).Workers()
	}
	data, err := json.Marshal(sv)
	if err != nil {
		d.r.log.Warn("autoscaling: its state is not saved with the checkpoint", "err", err)
		return nil
	}
	return data
}

// restoreScaling gives a new scaler the memory of the checkpoint the job
// resumed from, if it has one, and moves each environment to the workers
// it had then (within its bounds now).
func (d *driver) restoreScaling(s *scaler) error {
	if len(d.r.resumedScaling) == 0 {
		return nil
	}
	var sv savedScaling
	if err := json.Unmarshal(d.r.resumedScaling, &sv); err != nil {
		return fmt.Errorf("the checkpoint's autoscaling state: %w", err)
	}
	s.policy.State = sv.State
	for _, env := range slices.Sorted(maps.Keys(sv.Workers)) {
		if !slices.Contains(s.envs, env) {
			continue // the plan's environments changed: nothing to carry
		}
		lo, hi := d.r.pool.Bounds(env)
		n := min(max(sv.Workers[env], lo), hi)
		cur, err := d.r.pool.Scale(env, n)
		if err != nil || cur == n {
			continue
		}
		d.r.job.Message(jobpb.JobMessage_JOB_MESSAGE_BASIC,
			fmt.Sprintf("autoscaling: environment %s resumes at %d workers (from %d), as last decided before the restart", env, n, cur))
	}
	return nil
}
