package execute

import (
	"context"
	"errors"
	"fmt"
	"strings"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/beam-runner/beam-runner/harness"
	"github.com/beam-runner/beam-runner/runner/engine"
	"google.golang.org/protobuf/types/known/structpb"
)

// bundleFailed handles a failed bundle: when the engine grants another
// attempt it is queued to run again (after restarting its worker if that
// died); otherwise the returned error, naming the cause and the attempts,
// fails the job.
func (r *run) bundleFailed(ctx context.Context, eng *engine.Engine, ss *sdkStage, d bundleDone) error {
	var lost *harness.WorkerLost
	var user *harness.BundleError
	isLost, isUser := errors.As(d.err, &lost), errors.As(d.err, &user)
	if (!isLost && !isUser) || ctx.Err() != nil {
		eng.Fail(d.b.ID) // the runner's own failure, or the job is ending
		return d.err
	}
	cause, workerID := d.err.Error(), ""
	if isLost {
		workerID = lost.Worker
		cause = r.pool.describeLoss(ctx, lost)
	} else {
		workerID = user.Worker
		cause = fmt.Sprintf("user code failed in worker %s: %s", user.Worker, user.Msg)
	}
	what := fmt.Sprintf("%s during bundle %d of stage %s (%s) (attempt %d of %d)",
		cause, d.b.ID, ss.stage.ID, r.stageName(ss.stage), d.b.Attempt, eng.MaxAttempts())
	if isLost && r.loopback() {
		// The worker lived in the client, which is gone: no one to retry for.
		eng.Fail(d.b.ID)
		return fmt.Errorf("%s; the LOOPBACK worker is gone with its client%s", what, r.pool.workerOutput(workerID))
	}
	if !eng.Retry(d.b.ID) {
		return fmt.Errorf("%s; giving up after %d attempt(s)%s", what, d.b.Attempt, r.pool.workerOutput(workerID))
	}
	r.log.Warn("retrying bundle", "cause", what)
	r.job.Message(jobpb.JobMessage_JOB_MESSAGE_WARNING, "retrying: "+what)
	if isLost {
		if err := r.pool.restartLost(ctx, ss.stage.Env, workerID); err != nil {
			eng.Fail(d.b.ID)
			return fmt.Errorf("%s; %w", what, err)
		}
	}
	return nil
}

// loopback reports whether the job's workers run inside its client
// (environment_type LOOPBACK): they cannot be restarted. Python sends the
// option at the top level, Go inside go_options.options.
func (r *run) loopback() bool { return loopbackOptions(r.job.Options) }

func loopbackOptions(o *structpb.Struct) bool {
	opts := o.GetFields()
	if isLoopback(opts["beam:option:environment_type:v1"]) {
		return true
	}
	goOpts := opts["beam:option:go_options:v1"].GetStructValue().GetFields()["options"]
	return isLoopback(goOpts.GetStructValue().GetFields()["environment_type"])
}

func isLoopback(v *structpb.Value) bool { return strings.EqualFold(v.GetStringValue(), "LOOPBACK") }
