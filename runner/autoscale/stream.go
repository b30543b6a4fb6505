package autoscale

import "fmt"

// StageDecision is what the pass found for one stage.
type StageDecision struct {
	ID, Env string
	Source  bool
	// Observed is the stage's observed rate (a source's: elements
	// emitted per second; others: elements in per second).
	Observed float64
	// Rate is the rate one busy slot sustains: λp, or λo for a source.
	Rate        float64
	Selectivity float64
	BusySource  string
	// Backlog is a source's backlog or a stage's input queued in the
	// runner (streaming), or a stage's remaining input (batch), in
	// elements.
	Backlog float64
	// BacklogGrowth is a source's backlog growth since the last pass, in
	// elements per second: arrivals flow control kept in the source.
	BacklogGrowth float64
	// TargetIn is the target input rate (a source's: target output rate);
	// TargetOut its target output rate.
	TargetIn, TargetOut float64
	// Needed is busy seconds per second (batch: busy seconds of
	// remaining work) at the target.
	Needed float64
	// Parallelism is DS2's π: ⌈TargetIn / Rate⌉ (batch: ⌈Needed /
	// BatchFinish⌉). 0 when the stage was not measured.
	Parallelism int
	// MaxParallel is the input's (batch): bundles the stage can run now.
	MaxParallel int
	// Blocked is the input's (batch): its bundles run later.
	Blocked bool
	// Unmeasured: the stage had input to size for but no rate yet.
	Unmeasured bool
	Note       string
	// backlogUnknown: the backlog could not be counted in elements, so
	// it is neither a growth nor remembered for the next pass.
	backlogUnknown bool
}

// streamStages is DS2's pass: source targets from observed rate and
// backlog, then each stage's target input from its upstreams' target
// outputs, its needed busy time and its parallelism.
func (g *graph) streamStages(c Config, last lastPass) []StageDecision {
	out := make([]StageDecision, len(g.order))
	for i, s := range g.order {
		d := StageDecision{ID: s.ID, Env: s.Env, Source: len(s.Inputs) == 0,
			Selectivity: s.Rates.Selectivity, BusySource: s.Rates.BusySource}
		if d.Source {
			g.sourceTarget(&d, s, c, last)
		} else {
			d.Observed, d.Rate = s.Rates.ObservedIn, s.Rates.ProcessingRate
			for _, e := range s.Inputs {
				u := g.order[g.index[e.From]]
				d.TargetIn += out[g.index[e.From]].TargetOut * edgeShare(u, e)
			}
			queuedTarget(&d, s, c)
			d.TargetOut = d.TargetIn * selectivity(s, &d)
		}
		size(&d)
		out[i] = d
	}
	return out
}

// sourceTarget is a source's target output rate: its arrival rate (what
// it is observed to emit, plus the rate its backlog grew since the last
// pass: input that flow control left in the source) and its backlog
// worked off over the catch-up time.
func (g *graph) sourceTarget(d *StageDecision, s StageInput, c Config, last lastPass) {
	d.Observed, d.Rate, d.Selectivity = s.Rates.ObservedOut, s.Rates.OutputRate, 1
	backlog, ok := elements(s.Backlog, s, true)
	if !ok {
		d.Note = "backlog in bytes with no bytes per element measured; not counted"
	}
	d.Backlog, d.backlogUnknown = backlog, !ok
	if prev, seen := last.backlog[s.ID]; ok && seen && last.elapsedMs > 0 && backlog > prev {
		d.BacklogGrowth = (backlog - prev) / (float64(last.elapsedMs) / 1000)
	}
	d.TargetIn = d.Observed + d.BacklogGrowth + backlog/(float64(c.CatchUpMs)/1000)
	d.TargetOut = d.TargetIn
}

// queuedTarget adds a stage's input queued in the runner (Pending) to
// its target, worked off over the catch-up time as a source's backlog
// is: input a source read faster than the stage took it (a read resumed
// after a flow-control hold takes what waited in Kafka at once, while
// the source's own reported backlog stays as it was before the hold).
func queuedTarget(d *StageDecision, s StageInput, c Config) {
	queued, ok := elements(s.Pending, s, false)
	if !ok {
		d.Note = join(d.Note, "queued input in bytes with no bytes per element measured; not counted")
		return
	}
	d.Backlog = queued
	d.TargetIn += queued / (float64(c.CatchUpMs) / 1000)
}

// lastPass is what the previous pass saw, for the backlogs' growth.
type lastPass struct {
	backlog   map[string]float64
	elapsedMs int64
}

// selectivity is the stage's measured λo/λp, or 1 when it saw no input
// (noted: its consumers are sized as if it passed everything on).
func selectivity(s StageInput, d *StageDecision) float64 {
	if s.Rates.In > 0 {
		return s.Rates.Selectivity
	}
	d.Selectivity = 1
	return 1
}

// size is the stage's needed busy time and π at its target.
func size(d *StageDecision) {
	switch {
	case d.TargetIn <= 0:
	case d.Rate <= 0:
		d.Unmeasured = true
		d.Note = join(d.Note, "no processing rate measured yet")
	default:
		d.Needed = d.TargetIn / d.Rate
		d.Parallelism = ceil(d.Needed)
	}
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return fmt.Sprintf("%s; %s", a, b)
}
