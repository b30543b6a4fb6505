package execute

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/beam-runner/beam-runner/runner/jobs"
	"strings"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/beam-runner/beam-runner/harness"
	"github.com/beam-runner/beam-runner/runner/engine"
	"github.com/beam-runner/beam-runner/runner/plan"
)

// onFailed handles a failed bundle: when the engine's retry policy
// grants another attempt it is queued to run again (after restarting its
// worker if that died); otherwise the returned error, naming the cause
// and why it was not retried, fails the job. A lost worker's description
// can wait for its exit, so it is a command: the decision follows when
// it reports.
func (d *driver) onFailed(ctx context.Context, ss *sdkStage, bd bundleDone) error {
	var lost *harness.WorkerLost
	var user *harness.BundleError
	isLost, isUser := errors.As(bd.err, &lost), errors.As(bd.err, &user)
	if (!isLost && !isUser) || ctx.Err() != nil {
		d.eng.Fail(bd.b.ID) // the runner's own failure, or the job is ending
		return bd.err
	}
	if isUser {
		c := user.Cause()
		f := engine.Failure{User: true, Worker: user.Worker, Cause: c.Headline, Workers: d.r.distinctWorkers(ss)}
		detail := fmt.Sprintf("user code failed in worker %s:\n%s", user.Worker, strings.TrimRight(user.Msg, "\n"))
		return d.retry(ctx, ss, bd, f, cmp.Or(c.Headline, "user code failed"), c.Transform, detail)
	}
	d.command(ctx, func(ctx context.Context) func() error {
		desc := d.r.workers.DescribeLoss(ctx, lost)
		return func() error {
			f := engine.Failure{Worker: lost.Worker, Workers: d.r.distinctWorkers(ss)}
			head, detail, _ := strings.Cut(desc, "\n")
			return d.retry(ctx, ss, bd, f, head, "", detail)
		}
	})
	return nil
}

// retry has the engine decide whether failed bundle bd runs again, and
// restarts its worker if that was lost; head, transform and detail say
// what failed, for the job's messages and error.
func (d *driver) retry(ctx context.Context, ss *sdkStage, bd bundleDone, f engine.Failure, head, transform, detail string) error {
	r := d.r
	if detail != "" {
		detail = "\n" + detail
	}
	// The cause first, then where: the first line is what a user reads.
	what := fmt.Sprintf("%s (%s, bundle %d, attempt %d of %d)",
		head, r.bundlePlace(ss.stage, transform), bd.b.ID, bd.b.Attempt, d.eng.MaxAttempts())
	r.job.Stats().AddFailure(jobs.BundleFailure{At: time.Now().UnixMilli(), Cause: head, Stage: cmp.Or(ss.treeOf, ss.stage.ID),
		Transform: r.transformName(transform), Worker: f.Worker, Attempt: bd.b.Attempt})
	if !f.User && r.loopback() {
		// The worker lived in the client, which is gone: no one to retry for.
		d.eng.Fail(bd.b.ID)
		r.reportWorkerTail(f, what)
		return fmt.Errorf("%s; the LOOPBACK worker is gone with its client%s", what, detail)
	}
	if again, why := d.eng.Retry(bd.b.ID, f); !again {
		r.reportWorkerTail(f, what)
		return fmt.Errorf("%s; %s%s", what, why, detail)
	}
	r.log.Warn("retrying bundle", "cause", what+detail)
	r.job.Message(jobpb.JobMessage_JOB_MESSAGE_WARNING, "retrying: "+what+detail)
	if !f.User {
		d.restart(ctx, bd.b.ID, ss.stage.Env, f.Worker, what, detail)
	}
	return nil
}

// distinctWorkers is how many workers could run a stage's bundles, for
// the retry policy: the workers of a LOOPBACK job all live in its
// client's process, so they count as one.
func (r *run) distinctWorkers(ss *sdkStage) int {
	if r.loopback() {
		return 1
	}
	return ss.harness.Workers()
}

// reportWorkerTail puts the last lines of the worker that ran a failed
// bundle into the job's messages, before the job's error: the error a
// client receives stays the SDK's, which clients and Beam's own tests
// read (passert's examples compare its end). A lost worker's process
// output says how it ended; after a user failure it mostly repeats the
// SDK's message, which the error holds.
func (r *run) reportWorkerTail(f engine.Failure, what string) {
	if tail := r.workers.WorkerOutput(f.Worker, !f.User); tail != "" {
		r.job.Message(jobpb.JobMessage_JOB_MESSAGE_WARNING,
			fmt.Sprintf("last lines of worker %s, which ran %s:\n  %s", f.Worker, what, tail))
	}
}

// bundlePlace names where a bundle failed: its stage, and the transform
// when the SDK said which.
func (r *run) bundlePlace(st *plan.Stage, transform string) string {
	place := fmt.Sprintf("stage %s %q", st.ID, r.stageName(st))
	if transform == "" {
		return place
	}
	return fmt.Sprintf("%s, transform %q", place, r.transformName(transform))
}

// transformName is a transform's unique name, else its id as given.
func (r *run) transformName(id string) string {
	return cmp.Or(r.plan.Components.GetTransforms()[id].GetUniqueName(), id)
}

// loopback reports whether the job's workers run inside its client
// (environment_type LOOPBACK): they cannot be restarted.
func (r *run) loopback() bool { return jobs.LoopbackOptions(r.job.Options) }
