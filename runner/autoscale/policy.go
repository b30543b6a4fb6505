package autoscale

import "fmt"

// Mode is the job's kind: a streaming job is sized by its rates, a batch
// job by its remaining work.
type Mode int

const (
	Streaming Mode = iota
	Batch
)

// Config holds the policy's knobs; a zero field takes its default.
type Config struct {
	// CatchUpMs is the time a source's backlog should be worked off in:
	// it adds backlog/CatchUp to the source's target rate. Default 60 s.
	CatchUpMs int64
	// TargetUtilization is the busy share each worker is sized for, the
	// headroom for bursts. Default 0.7.
	TargetUtilization float64
	// ScaleDownIntervalMs is the least time between an environment's last
	// change and a scale-down. Default 5 min.
	ScaleDownIntervalMs int64
	// DownHysteresis: a scale-down goes to ⌈raw × (1+DownHysteresis)⌉
	// workers, so that noise around a whole number cannot flip-flop.
	// Default 0.1.
	DownHysteresis float64
	// DownWindowMs: a scale-down goes no lower than the highest need of
	// the passes in this window (the HPA's scale-down stabilization
	// window), so that one window that measured low cannot take a worker
	// that the next gives back. Default 1 min.
	DownWindowMs int64
	// BacklogQuietMs: a source's backlog counts as worked off once it is
	// at most this much of the source's observed rate. Default 5 s.
	BacklogQuietMs int64
	// Noise is the relative change in a rate taken as no change. Default 0.1.
	Noise float64
	// EffectDelayMs is how long after a scale-up its effect on throughput
	// is judged: one rate window. Default 10 s.
	EffectDelayMs int64
	// BatchFinishMs is the time a batch job's remaining work is sized to
	// finish in. Default 2 min.
	BatchFinishMs int64
}

// DefaultConfig is the policy's defaults.
func DefaultConfig() Config {
	return Config{CatchUpMs: 60_000, TargetUtilization: 0.7, ScaleDownIntervalMs: 300_000,
		DownHysteresis: 0.1, DownWindowMs: 60_000, BacklogQuietMs: 5_000, Noise: 0.1, EffectDelayMs: DefaultWindowMs,
		BatchFinishMs: 120_000}
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	pick := func(v *int64, def int64) {
		if *v <= 0 {
			*v = def
		}
	}
	pickF := func(v *float64, def float64) {
		if *v <= 0 {
			*v = def
		}
	}
	pick(&c.CatchUpMs, d.CatchUpMs)
	pick(&c.ScaleDownIntervalMs, d.ScaleDownIntervalMs)
	pick(&c.DownWindowMs, d.DownWindowMs)
	pick(&c.BacklogQuietMs, d.BacklogQuietMs)
	pick(&c.EffectDelayMs, d.EffectDelayMs)
	pick(&c.BatchFinishMs, d.BatchFinishMs)
	pickF(&c.TargetUtilization, d.TargetUtilization)
	pickF(&c.DownHysteresis, d.DownHysteresis)
	pickF(&c.Noise, d.Noise)
	c.TargetUtilization = min(c.TargetUtilization, 1)
	return c
}

// Edge is one input of a stage: the upstream stage, and the PCollection it
// reads when the upstream's outputs go to different consumers ("" = all
// of the upstream's output, as for a PCollection read by several stages).
type Edge struct {
	From        string
	PCollection string
}

// Amount is a quantity of work, in elements or bytes (bytes are turned
// into elements by the stage's measured bytes per element).
type Amount struct {
	Elements, Bytes float64
}

// StageInput is one fused stage as the policy sees it.
type StageInput struct {
	ID, Env string
	// Inputs are the stage's upstream stages; a stage with none is a
	// source, measured and sized by what it emits.
	Inputs []Edge
	Rates  Rates
	// Backlog is a source's remaining input, latest figure (SDF progress
	// remaining, restriction sizes; Kafka's consumer lag).
	Backlog Amount
	// Pending is a stage's input waiting in the runner to be processed
	// (streaming: queued; batch: with the input its running bundles
	// have yet to take).
	Pending Amount
	// MaxParallel is how many bundles the stage could run now (batch: its
	// pending restrictions and splittable pieces); 0 if unknown.
	MaxParallel int
	// Blocked: a batch stage's input cannot start yet (it waits for the
	// rest of its main input or its side inputs), so its MaxParallel
	// bundles run later, not beside the others'.
	Blocked bool
}

// EnvInput is one environment's workers and bounds.
type EnvInput struct {
	ID         string
	Workers    int
	MinWorkers int
	MaxWorkers int
	// Capacity is busy seconds per second one worker supplies (bundle
	// slots it runs truly in parallel); 1 if <= 0.
	Capacity float64
}

// Input is one policy pass's view of the job.
type Input struct {
	NowMs  int64
	Mode   Mode
	Stages []StageInput
	Envs   []EnvInput
}

// Policy is DS2 with its stability rules; State is all it remembers
// between passes.
type Policy struct {
	Config Config
	State  State
}

// NewPolicy returns a policy with c's knobs (zero fields default).
func NewPolicy(c Config) *Policy { return &Policy{Config: c.withDefaults()} }

// Decide makes one pass over the job: the target rates, each stage's
// needed busy time and parallelism, and each environment's workers after
// the stability rules. It updates p.State with the decision.
func (p *Policy) Decide(in Input) (Decision, error) {
	p.Config = p.Config.withDefaults()
	g, err := newGraph(in)
	if err != nil {
		return Decision{AtMs: in.NowMs}, err
	}
	p.State.init()
	d := Decision{AtMs: in.NowMs, Mode: in.Mode}
	if in.Mode == Batch {
		d.Stages = g.batchStages(p.Config)
	} else {
		last := lastPass{backlog: p.State.LastBacklog}
		if in.NowMs > p.State.LastPassMs {
			last.elapsedMs = in.NowMs - p.State.LastPassMs
		}
		d.Stages = g.streamStages(p.Config, last)
	}
	if in.Mode == Batch {
		for _, e := range in.Envs {
			d.Envs = append(d.Envs, p.decideBatchEnv(e, d.Stages))
		}
		return d, nil
	}
	drain, rate := p.draining(d.Stages), sourceRate(d.Stages)
	p.State.LastPassMs = in.NowMs
	for _, e := range in.Envs {
		d.Envs = append(d.Envs, p.decideStreamEnv(e, d.Stages, drain, rate, in.NowMs))
	}
	return d, nil
}

// validateEnv rejects bounds the policy cannot honour.
func validateEnv(e EnvInput) error {
	if e.ID == "" {
		return fmt.Errorf("autoscale: an environment has no id")
	}
	if e.MinWorkers < 0 || e.Workers < 0 || (e.MaxWorkers > 0 && e.MaxWorkers < e.MinWorkers) {
		return fmt.Errorf("autoscale: environment %s: bounds [%d, %d] with %d workers do not hold",
			e.ID, e.MinWorkers, e.MaxWorkers, e.Workers)
	}
	return nil
}
