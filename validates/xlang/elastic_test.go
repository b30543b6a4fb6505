//go:build xlang && elastic

package xlang

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/beam-runner/beam-runner/testsupport/nshost"
	"github.com/beam-runner/beam-runner/testsupport/serverproc"
	"github.com/beam-runner/beam-runner/testsupport/testkit"
)

// The elastic benchmark's hosts: a quarter core each by default, on
// 198.18.1.0/24 (the multihost lane uses 198.18.0.0/24).
var elHostOpts = nshost.Options{Prefix: "brel", Net: "198.18.1"}

// elConfig is the benchmark's setup, from ELASTIC_* variables.
type elConfig struct {
	rate, hosts, quota, window int
	// local, when not 0, runs the Python workers as up to that many
	// local SDK worker processes instead of on the namespace hosts
	// (ELASTIC_LOCAL), for the wait-bound stage: its workers wait, so
	// a host's quarter core is not what bounds them.
	local         int
	step          time.Duration
	cpuMs, waitMs float64
	out           string
	// plan is the steps' rates as multiples of R (ELASTIC_PLAN, default
	// 1,2,0.5,1: R → 2R → R/2 → R); fixed runs the job on every host's
	// worker without autoscaling (ELASTIC_FIXED=1), for the sweep of
	// fixed sizes.
	plan  []float64
	fixed bool
}

// maxWorkers is the Python environment's most workers: one per host, or
// the local processes.
func (c elConfig) maxWorkers() int { return max(c.hosts, c.local) }

// initialWorkers is the Python environment's workers at the start: one
// per host's pool; of local processes, the most when fixed, else
// --min_workers.
func (c elConfig) initialWorkers() int {
	if c.local == 0 || c.fixed {
		return c.maxWorkers()
	}
	return 1
}

func elasticConfig(t *testing.T) elConfig {
	c := elConfig{rate: testkit.EnvInt("ELASTIC_RATE", 50), hosts: testkit.EnvInt("ELASTIC_HOSTS", 3),
		quota: testkit.EnvInt("ELASTIC_QUOTA_US", 25000), window: 5, step: envDuration("ELASTIC_STEP", 4*time.Minute),
		cpuMs: float64(testkit.EnvInt("ELASTIC_CPU_MS", 4)), waitMs: float64(testkit.EnvInt("ELASTIC_WAIT_MS", 0)),
		out: os.Getenv("ELASTIC_OUT"), fixed: os.Getenv("ELASTIC_FIXED") == "1", local: testkit.EnvInt("ELASTIC_LOCAL", 0)}
	if c.local > 0 {
		c.hosts = 0
	}
	c.plan = elasticPlan(t, os.Getenv("ELASTIC_PLAN"))
	if c.out == "" {
		c.out = filepath.Join(repoRoot(t), ".work", "elastic", "run.json")
	}
	return c
}

// elasticPlan parses ELASTIC_PLAN: rates as multiples of R, comma
// separated.
func elasticPlan(t *testing.T, v string) []float64 {
	if v == "" {
		return []float64{1, 2, 0.5, 1}
	}
	var out []float64
	for _, f := range strings.Split(v, ",") {
		x, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || x <= 0 {
			t.Fatalf("ELASTIC_PLAN %q: want positive multiples of the rate, such as 1,2,0.5,1", v)
		}
		out = append(out, x)
	}
	return out
}

// span is the whole run's time: a step per planned rate.
func (c elConfig) span() time.Duration { return time.Duration(len(c.plan)) * c.step }

// TestElastic is the elastic benchmark (docs/bench/elastic.md): elastic.py
// on workers of the namespace hosts' pools (one worker per host), DS2
// sizing them, while the input rate steps R → 2R → R/2 → R. It records
// the run as JSON (ELASTIC_OUT) for bench/cmd/elastic, which computes the
// figures; it fails only if the job does not run or stops running.
func TestElastic(t *testing.T) {
	c := elasticConfig(t)
	ctx, cancel := context.WithTimeout(context.Background(), c.span()+15*time.Minute)
	defer cancel()
	o := elHostOpts
	o.QuotaUS, o.LogDir = c.quota, logDir(t)
	var hosts []*nshost.Host
	fnHost := "localhost"
	if c.local == 0 {
		hosts, fnHost = nshost.New(t, realPython(t), c.hosts, o), o.CoordAddr()
	}
	boot := startBroker(t, "kafka-elastic")
	exp := startExpansion(t, "elastic", "--alsoStartLoopbackWorker")
	in, out := "elastic-in", "elastic-out"
	// Producing first: the job's read fails while its topic does not exist.
	prod := startProducer(t, ctx, boot, in)
	running := make(chan time.Time, 1)
	steps := make(chan elStep, len(c.plan))
	go produceSteps(ctx, prod, c, running, steps)
	srv, web := startElasticServer(t, ctx, fnHost)
	cli := jobClient(t, srv.Addr)
	id := startElasticJob(t, ctx, c, srv.Addr, exp, boot, in, out, hosts)
	waitRunning(t, ctx, cli, id)
	start := time.Now()
	running <- start
	lat := followCounts(t, ctx, boot, out, int64(c.window)*1000)
	run := sampleElastic(t, ctx, cli, web, id, prod, hosts, start, c.span())
	run.Config = newElRunConfig(c, len(hosts))
	run.Config.PoolEnv = run.poolEnv
	close(steps)
	for s := range steps {
		run.Steps = append(run.Steps, elRunStep{At: s.at.Sub(start).Seconds(), Rate: s.rate})
	}
	for _, l := range lat.all2() {
		run.Outputs = append(run.Outputs, elRunLatency{At: l.at.Sub(start).Seconds(), Ms: l.ms})
	}
	if _, err := cli.Cancel(ctx, &jobpb.CancelJobRequest{JobId: id}); err != nil {
		t.Errorf("cancel %s: %v", id, err)
	}
	for _, line := range strings.Split(jobMessages(t, cli, id), " | ") {
		if strings.Contains(line, "autoscaling") {
			t.Log(lastChars(line, 1200))
		}
	}
	if err := os.MkdirAll(filepath.Dir(c.out), 0o755); err != nil {
		t.Fatal(err)
	}
	b, _ := json.MarshalIndent(run, "", " ")
	if err := os.WriteFile(c.out, b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("recorded %d samples, %d scaling changes, %d counts in %s: go run ./bench/cmd/elastic -run %s -svg docs/bench/elastic.svg",
		len(run.Samples), len(run.Events), len(run.Outputs), c.out, c.out)
}

type elStep struct {
	at   time.Time
	rate int
}

// produceSteps produces R until the job runs, then each planned rate
// (R, 2R, R/2, R by default) for a step, saying when each step began.
func produceSteps(ctx context.Context, p *producer, c elConfig, running <-chan time.Time, steps chan<- elStep) {
	for waiting := true; waiting && ctx.Err() == nil; {
		select {
		case <-running:
			waiting = false
		default:
			p.run(ctx, c.rate, time.Second)
		}
	}
	for _, m := range c.plan {
		r := int(math.Round(m * float64(c.rate)))
		steps <- elStep{time.Now(), r}
		p.run(ctx, r, c.step)
	}
}

func startElasticServer(t *testing.T, ctx context.Context, fnHost string) (*serverproc.Proc, int) {
	t.Helper()
	web := freeTCPPort(t)
	args := []string{"--state_dir=" + t.TempDir(), "--artifact_root=" + t.TempDir(), "--sdk_containers=local",
		"--web_port=" + strconv.Itoa(web), "--log_kind=json", "--fn_api_host=" + fnHost}
	// ELASTIC_SERVER_FLAGS, such as --log_level=debug for every bundle's
	// commit (what a latency breakdown reads).
	args = append(args, strings.Fields(os.Getenv("ELASTIC_SERVER_FLAGS"))...)
	p, err := serverproc.Start(ctx, serverproc.Spec{
		Bin:      runnerBin(t),
		Args:     args,
		PortFlag: "--job_port", LogPath: filepath.Join(logDir(t), "elastic-server.log"), Grace: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p, web
}

func jobClient(t *testing.T, addr string) jobpb.JobServiceClient {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return jobpb.NewJobServiceClient(conn)
}

// elScaleFlags are the job's autoscaling options: DS2 between one worker
// and one per host, deciding every 10 s, a scale-down at most every half
// step (the 5 min default is longer than a short step); none for a fixed
// run.
func elScaleFlags(c elConfig) []string {
	extra := strings.Fields(os.Getenv("ELASTIC_JOB_FLAGS")) // such as --streaming_bundle_time=500ms
	if c.fixed {
		return append([]string{"--autoscaling=none"}, extra...)
	}
	down := min(5*time.Minute, c.step/2)
	return append([]string{"--autoscaling=ds2", "--min_workers=1", fmt.Sprintf("--max_workers=%d", c.maxWorkers()),
		"--autoscaling_interval=10s", "--scale_down_interval=" + down.String()}, extra...)
}

func startElasticJob(t *testing.T, ctx context.Context, c elConfig, endpoint, exp, boot, in, out string, hosts []*nshost.Host) string {
	var pools []string
	for _, h := range hosts {
		pools = append(pools, h.PoolAddr())
	}
	args := []string{exp, boot, in, out, strconv.Itoa(c.window), fmt.Sprint(c.cpuMs), fmt.Sprint(c.waitMs),
		"--runner=PortableRunner", "--job_endpoint=" + endpoint}
	if len(pools) > 0 {
		args = append(args, "--worker_pools=python="+strings.Join(pools, ","))
	} else if c.fixed {
		args = append(args, fmt.Sprintf("--workers_per_environment=%d", c.local))
	}
	args = append(args, elScaleFlags(c)...)
	return startPyJob(t, ctx, "elastic", "elastic.py", args...).id
}

// realPython is the interpreter itself (not a pyenv shim, which would
// stand between the pool and its cgroup).
func realPython(t *testing.T) string {
	b, err := exec.Command(python, "-c", "import sys, apache_beam; print(sys.executable)").Output()
	if err != nil {
		t.Fatalf("%s cannot import apache_beam: %v", python, err)
	}
	return strings.TrimSpace(string(b))
}

// all2 is every count read back with its latency.
func (c *countLog) all2() []outLatency {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.lat)
}

// getJSON decodes the web UI's JSON at path into v.
func getJSON(port int, path string, v any) error {
	resp, err := http.Get(fmt.Sprintf("http://localhost:%d%s", port, path))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(v)
}
