// Package elastic is the analysis of the elastic benchmark (issue 36,
// docs/bench/elastic.md): a streaming job whose input rate steps
// R → 2R → R/2 → R while DS2 sizes its workers. The run itself
// (validates/xlang/elastic_test.go, `make elastic`) records a Run as JSON;
// this package turns it into per-step figures, a Markdown table and an
// SVG plot. Everything here is pure: samples in, figures out.
package elastic

import (
	"encoding/json"
	"os"
)

// Run is what one benchmark run recorded. Times are seconds from the
// job's RUNNING state.
type Run struct {
	Config  Config    `json:"config"`
	Steps   []Step    `json:"steps"`
	Samples []Sample  `json:"samples"`
	Events  []Event   `json:"events"`  // the job's scaling changes (stats.scaling)
	Outputs []Latency `json:"outputs"` // one per count read back
}

// Config is how the run was set up, for the report.
type Config struct {
	Rate          int     `json:"rate"` // R, records/s
	StepSeconds   float64 `json:"step_seconds"`
	CPUMs         float64 `json:"cpu_ms"`  // CPU per record of the CPU stage
	WaitMs        float64 `json:"wait_ms"` // wait per record of the wait stage
	WindowSeconds int     `json:"window_seconds"`
	Hosts         int     `json:"hosts"`
	HostCores     float64 `json:"host_cores"` // each host's CPU quota, in cores
	MinWorkers    int     `json:"min_workers"`
	MaxWorkers    int     `json:"max_workers"`
	Initial       int     `json:"initial_workers"` // the pool environment's at the start
	PoolEnv       string  `json:"pool_env"`        // the environment on the hosts' pools
	Flags         string  `json:"flags"`           // the runner's autoscaling flags
	Command       string  `json:"command"`         // how to run it again
	Date          string  `json:"date"`
	// Plan is the steps' rates as multiples of Rate; Fixed: the run's
	// workers were fixed (no autoscaling), a point of the sweep of fixed
	// sizes.
	Plan  []float64 `json:"plan,omitempty"`
	Fixed bool      `json:"fixed,omitempty"`
}

// Step is one input rate held from At on.
type Step struct {
	At   float64 `json:"at"`
	Rate int     `json:"rate"`
}

// Sample is the job as the sampler saw it at one moment.
type Sample struct {
	At       float64        `json:"at"`
	Produced int64          `json:"produced"` // records sent to the input topic so far
	Read     int64          `json:"read"`     // records the job's Kafka read emitted so far
	Backlog  float64        `json:"backlog"`  // the read stage's reported backlog (-1: none)
	Desired  map[string]int `json:"desired"`  // beam_runner_desired_workers per environment
	HostCPU  []float64      `json:"host_cpu"` // each host's CPU seconds so far
}

// Event is one scaling change of an environment.
type Event struct {
	At   float64 `json:"at"`
	Env  string  `json:"env"`
	From int     `json:"from"`
	To   int     `json:"to"`
	Why  string  `json:"why"`
}

// Latency is one output count: when it was read back, and how long after
// its window closed (its window's end, in event time) that was.
type Latency struct {
	At float64 `json:"at"`
	Ms int64   `json:"ms"`
}

// Load reads a Run written by Save.
func Load(path string) (*Run, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Run
	return &r, json.Unmarshal(b, &r)
}
