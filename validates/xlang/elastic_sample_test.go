//go:build xlang && elastic

package xlang

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"

	"github.com/beam-runner/beam-runner/testsupport/nshost"
)

// The run as JSON: the schema of bench/elastic.Run (bench sits above
// validates, so the two are kept in step by hand; bench/elastic's tests
// decode this shape).
type elRun struct {
	Config  elRunConfig    `json:"config"`
	Steps   []elRunStep    `json:"steps"`
	Samples []elRunSample  `json:"samples"`
	Events  []elRunEvent   `json:"events"`
	Outputs []elRunLatency `json:"outputs"`
	poolEnv string
}

type elRunConfig struct {
	Rate          int       `json:"rate"`
	StepSeconds   float64   `json:"step_seconds"`
	CPUMs         float64   `json:"cpu_ms"`
	WaitMs        float64   `json:"wait_ms"`
	WindowSeconds int       `json:"window_seconds"`
	Hosts         int       `json:"hosts"`
	HostCores     float64   `json:"host_cores"`
	MinWorkers    int       `json:"min_workers"`
	MaxWorkers    int       `json:"max_workers"`
	Initial       int       `json:"initial_workers"`
	PoolEnv       string    `json:"pool_env"`
	Flags         string    `json:"flags"`
	Command       string    `json:"command"`
	Date          string    `json:"date"`
	Plan          []float64 `json:"plan"`
	Fixed         bool      `json:"fixed"`
}

type elRunStep struct {
	At   float64 `json:"at"`
	Rate int     `json:"rate"`
}

type elRunSample struct {
	At       float64        `json:"at"`
	Produced int64          `json:"produced"`
	Read     int64          `json:"read"`
	Backlog  float64        `json:"backlog"`
	Desired  map[string]int `json:"desired"`
	HostCPU  []float64      `json:"host_cpu"`
}

type elRunEvent struct {
	At   float64 `json:"at"`
	Env  string  `json:"env"`
	From int     `json:"from"`
	To   int     `json:"to"`
	Why  string  `json:"why"`
}

type elRunLatency struct {
	At float64 `json:"at"`
	Ms int64   `json:"ms"`
}

func newElRunConfig(c elConfig, hosts int) elRunConfig {
	return elRunConfig{Rate: c.rate, StepSeconds: c.step.Seconds(), CPUMs: c.cpuMs, WaitMs: c.waitMs, WindowSeconds: c.window,
		Hosts: hosts, HostCores: float64(c.quota) / 100000, MinWorkers: 1, MaxWorkers: c.maxWorkers(), Initial: c.initialWorkers(),
		Plan: c.plan, Fixed: c.fixed,
		Flags: strings.Join(elScaleFlags(c), " "), Date: time.Now().UTC().Format("2006-01-02"),
		Command: fmt.Sprintf("ELASTIC_RATE=%d ELASTIC_STEP=%v ELASTIC_CPU_MS=%.0f ELASTIC_WAIT_MS=%.0f ELASTIC_HOSTS=%d ELASTIC_PLAN=%s%s%s make elastic",
			c.rate, c.step, c.cpuMs, c.waitMs, hosts, planText(c.plan), map[bool]string{true: " ELASTIC_FIXED=1"}[c.fixed],
			map[bool]string{true: fmt.Sprintf(" ELASTIC_LOCAL=%d", c.local)}[c.local > 0])}
}

func planText(plan []float64) string {
	var s []string
	for _, m := range plan {
		s = append(s, strconv.FormatFloat(m, 'g', -1, 64))
	}
	return strings.Join(s, ",")
}

// elJob is the part of the web UI's job view (/api/jobs/ID) sampled.
type elJob struct {
	Stats struct {
		Stages  []elJobStage   `json:"stages"`
		Desired map[string]int `json:"desired_workers"`
		Scaling []struct {
			At   int64  `json:"at"`
			Env  string `json:"env"`
			From int    `json:"from"`
			To   int    `json:"to"`
			Why  string `json:"why"`
		} `json:"scaling"`
	} `json:"stats"`
}

// cpuAndRead are the indexes of the CPU stage and of the SDK stage
// upstream of it (KafkaIO's read), walking up through runner stages.
func (j *elJob) cpuAndRead() (cpu, read int) {
	ss := j.Stats.Stages
	cpu = slices.IndexFunc(ss, func(s elJobStage) bool {
		return slices.ContainsFunc(s.Transforms, func(n string) bool { return strings.Contains(n, "CpuStage") })
	})
	read = -1
	for cur := cpu; cur >= 0 && len(ss[cur].Inputs) > 0; {
		in := ss[cur].Inputs[0]
		cur = slices.IndexFunc(ss, func(s elJobStage) bool { return slices.Contains(s.Outputs, in) })
		if cur >= 0 && ss[cur].Kind == "sdk" {
			return cpu, cur
		}
	}
	return cpu, read
}

type elJobStage = struct {
	ID          string   `json:"id"`
	Kind        string   `json:"kind"`
	Env         string   `json:"env"`
	Transforms  []string `json:"transforms"`
	Inputs      []string `json:"inputs"`
	Outputs     []string `json:"outputs"`
	ElementsOut int64    `json:"elements_out"`
	Rates       *struct {
		Backlog *float64 `json:"backlog"`
	} `json:"rates"`
}

// sampleElastic samples the job every 2 s for d, failing if it stops
// running, and returns the run (without its config, steps and outputs).
func sampleElastic(t *testing.T, ctx context.Context, cli jobpb.JobServiceClient, web int, id string, p *producer, hosts []*nshost.Host, start time.Time, d time.Duration) *elRun {
	run := &elRun{}
	var last elJob
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for ; time.Since(start) < d; <-tick.C {
		st, err := cli.GetState(ctx, &jobpb.GetJobStateRequest{JobId: id})
		if err != nil || st.GetState() != jobpb.JobState_RUNNING {
			t.Fatalf("job %s is %v (%v) after %v: %s", id, st.GetState(), err, time.Since(start), lastChars(jobMessages(t, cli, id), 3000))
		}
		var j elJob
		if err := getJSON(web, "/api/jobs/"+id, &j); err != nil {
			t.Logf("job view: %v", err)
			continue
		}
		last = j
		run.Samples = append(run.Samples, elSample(&j, p, hosts, time.Since(start).Seconds(), &run.poolEnv))
	}
	for _, e := range last.Stats.Scaling {
		run.Events = append(run.Events, elRunEvent{At: time.UnixMilli(e.At).Sub(start).Seconds(), Env: e.Env, From: e.From, To: e.To, Why: e.Why})
	}
	return run
}

func elSample(j *elJob, p *producer, hosts []*nshost.Host, at float64, poolEnv *string) elRunSample {
	p.mu.Lock()
	s := elRunSample{At: at, Produced: int64(p.sent), Backlog: -1, Desired: j.Stats.Desired}
	p.mu.Unlock()
	for _, h := range hosts {
		s.HostCPU = append(s.HostCPU, h.CPUSeconds())
	}
	cpu, read := j.cpuAndRead()
	if cpu >= 0 {
		*poolEnv = j.Stats.Stages[cpu].Env
	}
	if read >= 0 {
		r := j.Stats.Stages[read]
		s.Read = r.ElementsOut
		if r.Rates != nil && r.Rates.Backlog != nil {
			s.Backlog = *r.Rates.Backlog
		}
	}
	return s
}
