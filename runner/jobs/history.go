package jobs

import (
	"slices"
	"strings"
)

// The job page's checkpoint history and exceptions view (issue 37), in
// the spirit of Flink's dashboard: kept in memory, bounded, so a job
// running for months holds a fixed amount of it.

// Checkpoint triggers: why a checkpoint was taken.
const (
	TriggerInterval    = "interval"     // the periodic checkpoint
	TriggerStableInput = "stable input" // before a @RequiresStableInput stage's bundle
	TriggerSavepoint   = "savepoint"
	TriggerCancel      = "cancel savepoint"
	TriggerDrain       = "drain savepoint"
)

// CheckpointEvent is one checkpoint or savepoint a job wrote (or failed
// to write).
type CheckpointEvent struct {
	At         int64  `json:"at"` // Unix ms, once written
	Bytes      int64  `json:"bytes"`
	DurationMs int64  `json:"duration_ms"`
	Trigger    string `json:"trigger"`
	Dir        string `json:"dir,omitempty"`      // a savepoint's directory
	Sequence   uint64 `json:"sequence,omitempty"` // a savepoint's checkpoint count
	Error      string `json:"error,omitempty"`    // why it was not written
}

// BundleFailure is one failed attempt of a bundle.
type BundleFailure struct {
	At        int64 // Unix ms
	Cause     string
	Stage     string
	Transform string // the unique name, "" if the SDK did not say
	Worker    string
	Attempt   int
}

// ExceptionGroup is the failures that share a cause and a place: their
// count, when first and last seen, and the last one's worker and attempt.
type ExceptionGroup struct {
	Cause     string `json:"cause"`
	Stage     string `json:"stage"`
	Transform string `json:"transform,omitempty"`
	Worker    string `json:"worker"`
	Attempt   int    `json:"attempt"`
	First     int64  `json:"first"` // Unix ms
	Last      int64  `json:"last"`
	Count     int64  `json:"count"`
}

// Bounds: the last checkpoints (at the default interval, minutes of
// them), the last savepoints (rare, an operator's act, so kept apart),
// the distinct causes, and a cause's length (a message's first line is
// what a user reads; a stack trace is in the job's messages).
const (
	maxCheckpoints = 50
	maxSavepoints  = 20
	maxExceptions  = 50
	maxCauseLen    = 500
)

// history records checkpoints and failures; not safe for concurrent use
// (Stats holds it under its lock).
type history struct {
	checkpoints []CheckpointEvent // oldest first
	savepoints  []CheckpointEvent // oldest first
	exceptions  []ExceptionGroup  // in order first seen
}

func (h *history) addCheckpoint(ev CheckpointEvent) {
	h.checkpoints = appendBounded(h.checkpoints, ev, maxCheckpoints)
	if ev.Dir != "" && ev.Error == "" {
		h.savepoints = appendBounded(h.savepoints, ev, maxSavepoints)
	}
}

func appendBounded[T any](s []T, v T, n int) []T {
	s = append(s, v)
	if len(s) > n {
		s = slices.Clone(s[len(s)-n:])
	}
	return s
}

// addFailure counts f in the group of its cause and place; a new cause
// past the bound replaces the group seen least recently.
func (h *history) addFailure(f BundleFailure) {
	cause := causeLine(f.Cause)
	i := slices.IndexFunc(h.exceptions, func(g ExceptionGroup) bool {
		return g.Cause == cause && g.Stage == f.Stage && g.Transform == f.Transform
	})
	if i < 0 {
		g := ExceptionGroup{Cause: cause, Stage: f.Stage, Transform: f.Transform, First: f.At}
		if len(h.exceptions) < maxExceptions {
			h.exceptions = append(h.exceptions, g)
			i = len(h.exceptions) - 1
		} else {
			i = staleGroup(h.exceptions)
			h.exceptions[i] = g
		}
	}
	g := &h.exceptions[i]
	g.Worker, g.Attempt, g.Last = f.Worker, f.Attempt, max(g.Last, f.At)
	g.Count++
}

// staleGroup is the index of the group seen least recently.
func staleGroup(gs []ExceptionGroup) int {
	best := 0
	for i, g := range gs {
		if g.Last < gs[best].Last {
			best = i
		}
	}
	return best
}

// causeLine is a cause's first non-empty line, clipped.
func causeLine(s string) string {
	for line := range strings.Lines(s) {
		if line = strings.TrimSpace(line); line != "" {
			s = line
			break
		}
	}
	s = strings.TrimSpace(s)
	if len(s) > maxCauseLen {
		s = strings.ToValidUTF8(s[:maxCauseLen], "") + "…"
	}
	if s == "" {
		return "unknown failure"
	}
	return s
}

// AddCheckpoint records a checkpoint or savepoint the job wrote.
func (s *Stats) AddCheckpoint(ev CheckpointEvent) {
	s.mu.Lock()
	s.mu.history.addCheckpoint(ev)
	s.mu.Unlock()
}

// AddFailure records a failed attempt of a bundle, retried or not.
func (s *Stats) AddFailure(f BundleFailure) {
	s.mu.Lock()
	s.mu.history.addFailure(f)
	s.mu.Unlock()
}

// snapshotHistoryLocked copies the history into out.
func (s *Stats) snapshotHistoryLocked(out *StatsSnapshot) {
	h := &s.mu.history
	out.Checkpoints = slices.Clone(h.checkpoints)
	out.Savepoints = slices.Clone(h.savepoints)
	out.Exceptions = slices.Clone(h.exceptions)
}
