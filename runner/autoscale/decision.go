package autoscale

import (
	"fmt"
	"strings"
)

// EnvDecision is one environment's sizing.
type EnvDecision struct {
	ID      string
	Current int
	Desired int
	// Needed is Σ of the environment's stages' needed busy seconds per
	// second (batch: busy seconds of remaining work).
	Needed float64
	// Raw is the unrounded, unclamped worker count that need asks for.
	Raw    float64
	Reason string
}

// Changed reports whether the environment should move to Desired workers.
func (e EnvDecision) Changed() bool { return e.Desired != e.Current }

// Decision is one pass's outcome, with the rates it used.
type Decision struct {
	AtMs   int64
	Mode   Mode
	Stages []StageDecision
	Envs   []EnvDecision
}

// Changed reports whether any environment changes.
func (d Decision) Changed() bool {
	for _, e := range d.Envs {
		if e.Changed() {
			return true
		}
	}
	return false
}

// String is the decision as a job message: one line per environment
// (old and new workers, why), then one per stage (the rates used).
func (d Decision) String() string {
	var b strings.Builder
	for _, e := range d.Envs {
		b.WriteString(e.Line(d.Mode))
		b.WriteByte('\n')
	}
	for _, s := range d.Stages {
		b.WriteString(s.Line(d.Mode))
		b.WriteByte('\n')
	}
	return b.String()
}

// Line is the environment's line of a decision's message.
func (e EnvDecision) Line(m Mode) string {
	unit := "busy s/s"
	if m == Batch {
		unit = "busy s"
	}
	return fmt.Sprintf("env %s: %d -> %d workers (need %s %s, raw %s): %s",
		e.ID, e.Current, e.Desired, num(e.Needed), unit, num(e.Raw), e.Reason)
}

// Line is the stage's line of a decision's message: the rates it used.
func (s StageDecision) Line(m Mode) string {
	kind := "stage"
	if s.Source {
		kind = "source"
	}
	target := "target in %s/s out %s/s, needs %s busy s/s"
	if m == Batch {
		target = "remaining in %s out %s, needs %s busy s"
	}
	line := fmt.Sprintf("  %s %s: observed %s/s, rate/slot %s/s, selectivity %s, "+target+", parallelism %d",
		kind, s.ID, num(s.Observed), num(s.Rate), num(s.Selectivity), num(s.TargetIn), num(s.TargetOut),
		num(s.Needed), s.Parallelism)
	if s.Backlog > 0 && m == Streaming {
		what := "backlog"
		if !s.Source {
			what = "queued"
		}
		line += fmt.Sprintf(", %s %s", what, num(s.Backlog))
	}
	if s.BacklogGrowth > 0 {
		line += fmt.Sprintf(" growing %s/s", num(s.BacklogGrowth))
	}
	if s.BusySource != "" && s.BusySource != BusySDK {
		line += ", busy from " + s.BusySource
	}
	if s.Note != "" {
		line += " [" + s.Note + "]"
	}
	return line
}

// num prints a rate with four significant digits, without exponent for
// the ranges rates take.
func num(x float64) string {
	if x >= 1000 || x <= -1000 {
		return fmt.Sprintf("%.0f", x)
	}
	return fmt.Sprintf("%.4g", x)
}
