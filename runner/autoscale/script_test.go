package autoscale

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/beam-runner/beam-runner/testsupport/scripttest"
	"github.com/cockroachdb/datadriven"
)

// TestScripts plays the policy scenarios in testdata/*.txt, written in
// the language testdata/README.md describes: rates in, decisions out. No
// worker runs and no clock is read; the script's time moves only by run.
func TestScripts(t *testing.T) {
	scripttest.Run(t, func() func(*testing.T, *datadriven.TestData) string { return (&sim{}).run })
}

// sim is a job as the scripts describe it: environments, stages with the
// rates their bundles report, sources' backlogs.
type sim struct {
	p        *Policy
	mode     Mode
	windowMs int64
	nowMs    int64
	envs     []EnvInput
	stages   []*simStage
	rng      *rand.Rand
}

type simStage struct {
	in              StageInput
	w               *Window
	rate            rateSpec
	backlogChange   float64 // elements per second
	pendingChange   float64
	pendingElements bool
}

// rateSpec is what a stage's bundles report per second of the script's time.
type rateSpec struct {
	in, out, busy, runnerBusy, bytesIn, bytesOut, hold, bp float64
	sdk                                                    bool
	split                                                  map[string]float64
}

func (s *sim) run(t *testing.T, d *datadriven.TestData) string {
	if d.Cmd != "job" && s.p == nil {
		d.Fatalf(t, "%s before job", d.Cmd)
	}
	switch d.Cmd {
	case "job":
		return s.job(t, d)
	case "rate":
		s.stage(t, d).rate = parseRate(t, d)
	case "backlog", "pending":
		return s.amount(t, d)
	case "sample":
		return s.sample(t, d)
	case "rates":
		st := s.stage(t, d)
		slots := s.slots(st)
		now := s.nowMs
		d.MaybeScanArgs(t, "slots", &slots)
		d.MaybeScanArgs(t, "now", &now)
		return fmtRates(st.w.Rates(now, slots))
	case "run":
		return s.runFor(t, d)
	case "decide":
		return s.decide()
	case "state":
		return fmtState(s.p.State)
	default:
		d.Fatalf(t, "unknown command %q", d.Cmd)
	}
	return ""
}

// job declares the job: its config from the arguments, then "env ID
// workers=N [min=N] [max=N] [capacity=F]" and "stage ID env=E
// [in=(A,B:PCOLL)]" lines.
func (s *sim) job(t *testing.T, d *datadriven.TestData) string {
	c := Config{}
	s.windowMs = dur(t, d, "window", DefaultWindowMs)
	c.CatchUpMs = dur(t, d, "catchup", 0)
	c.ScaleDownIntervalMs = dur(t, d, "interval", 0)
	c.BatchFinishMs = dur(t, d, "finish", 0)
	c.EffectDelayMs = dur(t, d, "effect", 0)
	c.DownWindowMs = dur(t, d, "downwindow", 0)
	d.MaybeScanArgs(t, "util", &c.TargetUtilization)
	d.MaybeScanArgs(t, "hysteresis", &c.DownHysteresis)
	d.MaybeScanArgs(t, "noise", &c.Noise)
	s.p, s.nowMs, s.envs, s.stages = NewPolicy(c), 0, nil, nil
	s.mode = Streaming
	if d.HasArg("batch") {
		s.mode = Batch
	}
	s.rng = rand.New(rand.NewPCG(1, 2))
	for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
		if err := s.declare(line); err != nil {
			d.Fatalf(t, "%v", err)
		}
	}
	return fmt.Sprintf("%d environments, %d stages", len(s.envs), len(s.stages))
}

func (s *sim) declare(line string) error {
	cmd, args, err := datadriven.ParseLine(line)
	if err != nil || len(args) == 0 {
		return fmt.Errorf("line %q: %v", line, err)
	}
	id, kv := args[0].Key, map[string][]string{}
	for _, a := range args[1:] {
		kv[a.Key] = a.Vals
	}
	switch cmd {
	case "env":
		e := EnvInput{ID: id}
		e.Workers, e.MinWorkers, e.MaxWorkers = atoi(kv["workers"]), atoi(kv["min"]), atoi(kv["max"])
		if v := kv["capacity"]; len(v) == 1 {
			e.Capacity, _ = strconv.ParseFloat(v[0], 64)
		}
		s.envs = append(s.envs, e)
	case "stage":
		st := &simStage{in: StageInput{ID: id, Env: first(kv["env"])}, w: NewWindow(s.windowMs)}
		for _, v := range kv["in"] {
			from, pc, _ := strings.Cut(v, ":")
			st.in.Inputs = append(st.in.Inputs, Edge{From: from, PCollection: pc})
		}
		st.w.Observe(0)
		s.stages = append(s.stages, st)
	default:
		return fmt.Errorf("line %q: want env or stage", line)
	}
	return nil
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

func atoi(v []string) int {
	n, _ := strconv.Atoi(first(v))
	return n
}

// dur reads a duration argument ("10s", "5m", "250ms") as milliseconds.
func dur(t *testing.T, d *datadriven.TestData, key string, def int64) int64 {
	var v string
	if !d.MaybeScanArgs(t, key, &v) {
		return def
	}
	x, err := time.ParseDuration(v)
	if err != nil {
		d.Fatalf(t, "%s=%s: %v", key, v, err)
	}
	return x.Milliseconds()
}

func (s *sim) stage(t *testing.T, d *datadriven.TestData) *simStage {
	if len(d.CmdArgs) == 0 {
		d.Fatalf(t, "%s: which stage?", d.Cmd)
	}
	for _, st := range s.stages {
		if st.in.ID == d.CmdArgs[0].Key {
			return st
		}
	}
	d.Fatalf(t, "no stage %q", d.CmdArgs[0].Key)
	return nil
}

func (s *sim) env(id string) *EnvInput {
	for i := range s.envs {
		if s.envs[i].ID == id {
			return &s.envs[i]
		}
	}
	return nil
}

// slots is the bundle slots a stage had: its environment's workers times
// their capacity.
func (s *sim) slots(st *simStage) int {
	e := s.env(st.in.Env)
	if e == nil {
		return 1 // a script that names no such environment: Decide says so
	}
	return ceil(float64(e.Workers) * capacity(*e))
}
