package autoscale

import (
	"cmp"
	"fmt"
)

// draining names the first source whose backlog, or stage whose queued
// input, is being worked off, "" if none, and remembers every source's
// backlog for the next pass. A
// backlog is being worked off while it is above BacklogQuietMs of its
// source's observed rate, or when it grew since the last pass by more
// than Noise of that threshold (a source falling behind from a small
// backlog).
func (p *Policy) draining(stages []StageDecision) string {
	why := ""
	for _, s := range stages {
		if !s.Source {
			why = cmp.Or(why, queuedDraining(s, p.Config))
			continue
		}
		if s.backlogUnknown {
			delete(p.State.LastBacklog, s.ID)
			continue
		}
		quiet := quietMark(s, p.Config)
		last, seen := p.State.LastBacklog[s.ID]
		p.State.LastBacklog[s.ID] = s.Backlog
		if why != "" {
			continue
		}
		switch {
		case s.Backlog > quiet:
			why = fmt.Sprintf("source %s's backlog %s is being worked off (quiet below %s)", s.ID, num(s.Backlog), num(quiet))
		case seen && s.Backlog-last > p.Config.Noise*quiet && s.Backlog > 0:
			why = fmt.Sprintf("source %s's backlog grew from %s to %s", s.ID, num(last), num(s.Backlog))
		}
	}
	return why
}

// queuedDraining says why a stage's input queued in the runner holds a
// scale-down, "" if it does not: while it is above BacklogQuietMs of
// the stage's observed input rate, it is being worked off.
func queuedDraining(s StageDecision, c Config) string {
	quiet := quietMark(s, c)
	if s.Backlog <= quiet {
		return ""
	}
	return fmt.Sprintf("stage %s's queued input %s is being worked off (quiet below %s)", s.ID, num(s.Backlog), num(quiet))
}

// quietMark is the backlog below which a stage's counts as worked off:
// BacklogQuietMs of its observed rate.
func quietMark(s StageDecision, c Config) float64 {
	return s.Observed * float64(c.BacklogQuietMs) / 1000
}

// sourceRate is the job's observed source rate: elements per second all
// its sources emit.
func sourceRate(stages []StageDecision) float64 {
	r := 0.0
	for _, s := range stages {
		if s.Source {
			r += s.Observed
		}
	}
	return r
}
