package execute

import (
	"fmt"
	"slices"
	"strings"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/beam-runner/beam-runner/runner/autoscale"
	"github.com/beam-runner/beam-runner/runner/jobs"
	"github.com/beam-runner/beam-runner/runner/stagekind"
)

// Autoscaling (issue 36, docs/scaling.md "Autoscaling"): every interval
// the driver hands the stage rates it measures (rates.go) to the pure DS2
// policy (runner/autoscale) and carries out its decision with
// workers.Pool.Scale, which starts and drains workers on goroutines of
// its own: the driver never waits on a process. Each change is a job
// message naming the rates used, the old and new counts and why; each
// environment's desired count is published to the job's statistics
// (/metrics beam_runner_desired_workers).

// scaler is the driver's autoscaling loop; nil when the job does not
// scale.
type scaler struct {
	policy *autoscale.Policy
	every  time.Duration
	next   time.Time
	stages []autoscale.StageInput // the graph; Rates and Backlog per pass
	envs   []string
	// splittable are the stages that start with a splittable DoFn's
	// processing, whose input is restrictions.
	splittable map[string]bool
	warned     bool // a pass's error was logged
}

// newScaler sets up the loop when the job's autoscaling is on. The
// first scale-down waits a scale-down interval from the start, as after
// any change: a job's first seconds measure too little to give workers
// back on.
func (d *driver) newScaler(now time.Time) *scaler {
	if d.r.pool == nil || !d.r.pool.Scaling().On() {
		return nil
	}
	sc := d.r.pool.Scaling()
	s := &scaler{every: sc.Interval, next: now.Add(sc.Interval), stages: scaleGraph(d.r.plan, d.stages),
		policy: autoscale.NewPolicy(autoscale.Config{ScaleDownIntervalMs: sc.ScaleDownInterval.Milliseconds(),
			DownWindowMs:  max(sc.ScaleDownWindow.Milliseconds(), 1), // 0 would take the policy's default
			EffectDelayMs: d.rates.lengthMs, BatchFinishMs: sc.BatchTarget.Milliseconds()}),
		splittable: map[string]bool{}}
	for _, st := range d.r.plan.Stages {
		s.splittable[st.ID] = splittableRead(d.r.plan, st)
	}
	for _, st := range s.stages {
		if !slices.Contains(s.envs, st.Env) {
			s.envs = append(s.envs, st.Env)
		}
	}
	slices.Sort(s.envs)
	s.policy.State.LastChangeMs = map[string]int64{}
	for _, env := range s.envs {
		s.policy.State.LastChangeMs[env] = now.UnixMilli()
	}
	if err := d.restoreScaling(s); err != nil {
		d.r.log.Warn("autoscaling: starts afresh", "err", err)
	}
	for _, env := range s.envs {
		d.capEnvBundles(env, d.r.pool.Harnesses(env).Workers())
	}
	return s
}

// capEnvBundles holds env's stages that run a bundle per worker (Python
// processes, pool workers: engine.CapBundles) to the workers env has or
// is moving to. The engine's bound was raised to --max_workers
// (spec.Config.ScaledMax) so that the cap can follow the workers up.
func (d *driver) capEnvBundles(env string, workers int) {
	for _, st := range d.r.plan.Stages {
		if st.Kind == stagekind.SDK && st.Env == env {
			d.eng.CapBundles(st.ID, workers)
		}
	}
}

// autoscale runs a policy pass when one is due, from onTick.
func (d *driver) autoscale(now time.Time) {
	s := d.scale
	if s == nil || now.Before(s.next) {
		return
	}
	s.next = now.Add(s.every)
	dec, err := s.policy.Decide(d.scaleInput(now.UnixMilli()))
	if err != nil {
		if !s.warned {
			s.warned = true
			d.r.log.Warn("autoscaling: policy pass failed", "err", err)
		}
		return
	}
	d.r.log.Debug("autoscaling pass", "decision", dec.String())
	desired := map[string]int{}
	for _, e := range dec.Envs {
		desired[e.ID] = e.Desired
		if e.Changed() {
			d.applyScale(e, dec)
		}
	}
	d.r.job.Stats().SetDesiredWorkers(desired)
}

// scaleInput is the policy's view of the job now: each stage's rates
// over its window and backlog (a streaming job's stages: also the input
// queued for them; a batch job's: its remaining work), each
// environment's workers and bounds.
func (d *driver) scaleInput(nowMs int64) autoscale.Input {
	s := d.scale
	in := autoscale.Input{NowMs: nowMs, Mode: autoscale.Batch}
	if d.r.streaming {
		in.Mode = autoscale.Streaming
	}
	work := d.eng.Work(workCount)
	for _, st := range s.stages {
		if w := d.rates.windows[st.ID]; w != nil {
			st.Rates = w.Rates(nowMs, max(d.r.concurrency.peak[st.ID], 1))
		}
		st.Backlog = autoscale.Amount{Elements: d.rates.backlog[st.ID]}
		if in.Mode == autoscale.Batch {
			d.batchWork(&st, s.splittable[st.ID], work[st.ID])
		} else {
			d.streamWork(&st, s.splittable[st.ID], work[st.ID])
		}
		in.Stages = append(in.Stages, st)
	}
	for _, env := range s.envs {
		lo, hi := d.r.pool.Bounds(env)
		in.Envs = append(in.Envs, autoscale.EnvInput{ID: env, Workers: d.r.pool.Harnesses(env).Workers(),
			MinWorkers: lo, MaxWorkers: hi})
	}
	return in
}

// applyScale has the pool move an environment to its decided workers,
// without waiting, and says so in the job's messages.
func (d *driver) applyScale(e autoscale.EnvDecision, dec autoscale.Decision) {
	if _, err := d.r.pool.Scale(e.ID, e.Desired); err != nil {
		d.r.log.Warn("autoscaling: cannot scale", "env", e.ID, "err", err)
		return
	}
	d.capEnvBundles(e.ID, e.Desired)
	d.r.log.Info("autoscaling", "env", e.ID, "from", e.Current, "to", e.Desired, "why", e.Reason)
	d.r.job.Message(jobpb.JobMessage_JOB_MESSAGE_BASIC, scaleMessage(e, dec))
	d.r.job.Stats().AddScaling(jobs.ScalingEvent{At: dec.AtMs, Env: e.ID, From: e.Current, To: e.Desired, Why: e.Reason})
}

// scaleMessage is a change's job message: its environment's line (old
// and new workers, the need, why), then the rates of the environment's
// stages that the decision used.
func scaleMessage(e autoscale.EnvDecision, dec autoscale.Decision) string {
	var b strings.Builder
	fmt.Fprintf(&b, "autoscaling (DS2): %s", e.Line(dec.Mode))
	for _, s := range dec.Stages {
		if s.Env == e.ID {
			b.WriteString("\n" + s.Line(dec.Mode))
		}
	}
	return b.String()
}
