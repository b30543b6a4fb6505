package elastic

import (
	"math"
	"slices"
)

// busyCores is the CPU (in cores) above which a host counts as running a
// worker that takes bundles: in the smoke run an idle host (its pool, or
// its pool and a worker without bundles) used at most 0.008 of a core
// over 2 s, and a host whose worker took a third of 50 records/s of 4 ms
// each at least 0.03.
const busyCores = 0.02

// settle is how long after a step's last decision its workers count as
// converged: one rate window of the runner (10 s) for the new workers'
// bundles to show in the latency and lag.
const settle = 10.0

// StepResult is the figures of one step of the input rate.
type StepResult struct {
	From, To    float64 // seconds from RUNNING
	Rate        int     // records/s the producer held
	Decisions   int     // scaling changes of the pool environment in the step
	Stable      bool    // the last decision came at least settle before the step's end
	FlipFlops   int     // reversals of direction among them
	ToDecision  float64 // step start to its first decision (-1: none)
	ToWorkers   float64 // step start to a new worker taking bundles (-1: none)
	Workers     int     // the pool environment's workers at the step's end
	BusyHosts   int     // hosts taking bundles at the step's end
	P50, P99    int64   // latency (ms) of counts read back once converged
	StepP99     int64   // latency p99 (ms) over the whole step
	Counts      int     // how many counts that is
	MaxLag      int64   // most records waiting in Kafka once converged
	EndLag      int64   // records waiting at the step's end
	OtherEvents int     // scaling changes of other environments in the step
}

// Percentile is the nearest-rank p-th percentile (0 < p ≤ 100) of xs;
// 0 for none.
func Percentile(xs []int64, p float64) int64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	k := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(k, 1), len(s))-1]
}

// FlipFlops counts the reversals of direction in a sequence of changes:
// up then down, or down then up.
func FlipFlops(evs []Event) int {
	n, last := 0, 0
	for _, e := range evs {
		dir := sign(e.To - e.From)
		if dir != 0 && last != 0 && dir != last {
			n++
		}
		if dir != 0 {
			last = dir
		}
	}
	return n
}

func sign(x int) int {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}

// BusyHosts is, per sample after the first, how many hosts used more
// than busyCores over the interval since the previous sample.
func BusyHosts(ss []Sample) []int {
	out := make([]int, len(ss))
	for i := 1; i < len(ss); i++ {
		dt := ss[i].At - ss[i-1].At
		for h := range ss[i].HostCPU {
			if dt > 0 && h < len(ss[i-1].HostCPU) && (ss[i].HostCPU[h]-ss[i-1].HostCPU[h])/dt > busyCores {
				out[i]++
			}
		}
	}
	return out
}

// TimeToWorkers is the time from a step's start at t0 to the first
// sample, after the step's first scale-up (ups, in time order) and before
// t1, with more hosts taking bundles than just before that decision: the
// new worker started, connected and ran bundles. -1 without a scale-up,
// or if no new host took bundles within the step.
func TimeToWorkers(ss []Sample, busy []int, ups []Event, t0, t1 float64) float64 {
	if len(ups) == 0 {
		return -1
	}
	at, base := ups[0].At, -1
	for i, s := range ss {
		switch {
		case s.At <= at:
			base = busy[i]
		case s.At < t1 && base >= 0 && busy[i] > base:
			return s.At - t0
		}
	}
	return -1
}

// WorkersAt is the pool environment's workers at time t: the initial
// count, then each change's new count.
func WorkersAt(evs []Event, env string, initial int, t float64) int {
	n := initial
	for _, e := range evs {
		if e.Env == env && e.At <= t {
			n = e.To
		}
	}
	return n
}

// Lag is the records waiting in Kafka at a sample: the backlog KafkaIO's
// read reports (its offsets left, what the issue calls consumer lag),
// else, before it reports one, produced minus what the runner counted
// the read emitting.
func Lag(s Sample) int64 {
	if s.Backlog >= 0 {
		return int64(s.Backlog + 0.5)
	}
	return Unread(s)
}

// Unread is produced minus what the runner counted the read emitting.
// In the smoke run it stayed 700 to 1,000 records above KafkaIO's backlog
// while latency showed no such lag: the read stage's element count lags.
func Unread(s Sample) int64 { return max(s.Produced-s.Read, 0) }
