package elastic

import (
	"fmt"
	"strings"
)

// Table is the per-step figures as a Markdown table, then the totals.
func Table(r *Run, steps []StepResult, t Totals) string {
	var b strings.Builder
	fmt.Fprintln(&b, "| step | rate /s | decisions | stable | flip-flops | step → decision | step → new worker taking bundles | workers at end (hosts busy) | p50 / p99 latency once converged | counts | p99 whole step | max lag once converged | lag at end |")
	fmt.Fprintln(&b, "|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, s := range steps {
		fmt.Fprintf(&b, "| %s–%s | %d | %d | %s | %d | %s | %s | %d (%d) | %s | %d | %.1f s | %d | %d |\n",
			clock(s.From), clock(s.To), s.Rate, s.Decisions, yesNo(s.Stable), s.FlipFlops, secs(s.ToDecision), secs(s.ToWorkers),
			s.Workers, s.BusyHosts, latency(s), s.Counts, float64(s.StepP99)/1000, s.MaxLag, s.EndLag)
	}
	saved := 0.0
	if t.MaxSeconds > 0 {
		saved = 1 - t.WorkerSeconds/t.MaxSeconds
	}
	fmt.Fprintf(&b, "\nOver %s: %.0f worker-seconds of the pool environment against %.0f at --max_workers=%d throughout (%.0f %% fewer); hosts took bundles for %.0f host-seconds; %d flip-flops at constant rate.\n",
		clock(t.Seconds), t.WorkerSeconds, t.MaxSeconds, r.Config.MaxWorkers, saved*100, t.BusySeconds, t.FlipFlops)
	return b.String()
}

// Decisions lists the scaling changes, one line each.
func Decisions(r *Run) string {
	var b strings.Builder
	for _, e := range r.Events {
		why, _, _ := strings.Cut(e.Why, "\n")
		fmt.Fprintf(&b, "- %s env %s: %d → %d: %s\n", clock(e.At), e.Env, e.From, e.To, why)
	}
	return b.String()
}

func clock(s float64) string {
	n := int(s + 0.5)
	return fmt.Sprintf("%d:%02d", n/60, n%60)
}

func secs(s float64) string {
	if s < 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f s", s)
}

func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "no"
}

func latency(s StepResult) string {
	if s.Counts == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f / %.1f s", float64(s.P50)/1000, float64(s.P99)/1000)
}
