//go:build xlang && backpressure

package xlang

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/beam-runner/beam-runner/testsupport/serverproc"
)

// The back-pressure check's input and pipeline: bpRecords records of
// bpValueBytes each in a topic of two partitions, read by KafkaIO and fed
// to a Python stage that spends bpCostMs of CPU on each (at most 1,000
// records a second on its one worker).
//
// The broker serves consumers at most bpReadBytes a second (a Kafka
// client quota), about 13,000 of these records: over ten times the slow
// stage. Unthrottled, the runner without flow control took 1.5 million
// records in its first 20 s (2026-12-04), so by the end of the first
// minute that the bound excuses its growth was over and the check could
// not fail; at this rate the 2 million take over two minutes to read.
const (
	bpRecords    = 2_000_000
	bpValueBytes = 200
	bpReadBytes  = 3 << 20
	bpTopic      = "backpressure-in"
	bpCostMs     = 1
	bpEvery      = 2 * time.Second // between two samples
)

// TestKafkaBackPressure preloads a topic with 2 million records, throttles
// its consumers to bpReadBytes a second, and runs
// kafka_backpressure.py (ReadFromKafka, a stage far slower than the read,
// a sink that counts) on a job server with a --state_dir, sampling the
// server's RSS and its store's size on disk every bpEvery:
//
//   - with flow control (the default) for two minutes: after the first
//     minute both stay within the stated bound (flatbound.go), the web
//     UI's data and /metrics show the slow stage busy and the read
//     back-pressured, and most of the records still wait in Kafka;
//   - with --flow_control=false until either grows past that bound (at
//     most two minutes): the same check must fail there, or it proves
//     nothing;
//   - with --autoscaling=ds2 --max_workers=3: the job's messages show DS2
//     adding workers to the slow stage's environment.
//
// Each job is cancelled at the end of its window: draining 2 million
// records at 1,000 a second would take over half an hour.
func TestKafkaBackPressure(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	boot := startBroker(t, "kafka-backpressure")
	exp := startExpansion(t, "backpressure", "--alsoStartLoopbackWorker")
	preload(t, ctx, boot)
	bin := runnerBin(t)
	t.Logf("stated bound: after the first %v, the server's RSS and its store on disk each within %.0f %% or %d MiB (whichever is more) of their value at %v",
		flatWarm, flatFraction*100, flatFloorMiB, flatWarm)

	on := runBackPressure(t, ctx, bpConfig{name: "flow-on", bin: bin, exp: exp, boot: boot, window: 2 * time.Minute})
	grew, ok := grewPast(on.samples, flatWarm)
	if !ok {
		t.Fatalf("flow control on: no sample after %v", flatWarm)
	}
	for _, g := range grew {
		t.Errorf("flow control on: %s, past the bound: the backlog was copied out of Kafka into the runner", g)
	}
	checkHeld(t, on)

	off := runBackPressure(t, ctx, bpConfig{name: "flow-off", bin: bin, exp: exp, boot: boot, window: 2 * time.Minute,
		serverFlags: []string{"--flow_control=false"}, untilGrown: true})
	if grew, _ := grewPast(off.samples, flatWarm); len(grew) == 0 {
		t.Errorf("flow control off: neither RSS nor store grew past the bound in %v (read %d of %d records): the check cannot tell a runner that holds its source from one that does not",
			off.samples[len(off.samples)-1].at.Round(time.Second), off.src.ElementsOut, bpRecords)
	} else {
		t.Logf("flow control off, as it must: %s", strings.Join(grew, "; "))
	}

	ds2 := runBackPressure(t, ctx, bpConfig{name: "ds2", bin: bin, exp: exp, boot: boot, window: 90 * time.Second,
		jobFlags: []string{"--autoscaling=ds2", "--min_workers=1", "--max_workers=3"}})
	checkScaledUp(t, ds2, on)
}

// preload fills the topic and checks, with Kafka's own end offsets, that
// it holds every record; then it throttles consumers to bpReadBytes.
func preload(t *testing.T, ctx context.Context, boot string) {
	t.Helper()
	start := time.Now()
	if _, err := kafkaClient(t, ctx, "", "fill", boot, bpTopic, fmt.Sprint(bpRecords), fmt.Sprint(bpValueBytes)); err != nil {
		t.Fatal(err)
	}
	ends, err := kafkaClient(t, ctx, "", "ends", boot, bpTopic)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := strconv.ParseInt(strings.TrimSpace(ends), 10, 64); err != nil || n != bpRecords {
		t.Fatalf("the topic's end offsets add up to %q (%v), want %d", ends, err, bpRecords)
	}
	t.Logf("preloaded %s with %d records of %d B in %v", bpTopic, bpRecords, bpValueBytes, time.Since(start).Round(100*time.Millisecond))
	if _, err := kafkaClient(t, ctx, "", "quota", boot, fmt.Sprint(bpReadBytes)); err != nil {
		t.Fatal(err)
	}
}

type bpConfig struct {
	name, bin, exp, boot  string
	serverFlags, jobFlags []string
	window                time.Duration // sampling, from the job's RUNNING
	untilGrown            bool          // stop sampling once past the bound
}

// bpResult is what one run measured; the stages are as the web UI's job
// view showed them at the end of the window.
type bpResult struct {
	name      string
	samples   []memSample
	slow, src uiStage
	series    map[string]float64 // /metrics at the end of the window
	messages  string             // the job's messages
}

// runBackPressure runs the pipeline on a server of its own, samples it
// for the window, reads the UI's view and /metrics, cancels the job and
// stops the server.
func runBackPressure(t *testing.T, ctx context.Context, c bpConfig) *bpResult {
	t.Helper()
	stateDir, web := t.TempDir(), freeTCPPort(t)
	p, err := serverproc.Start(ctx, serverproc.Spec{
		Bin: c.bin,
		Args: append([]string{"--state_dir=" + stateDir, "--artifact_root=" + t.TempDir(), "--sdk_containers=local",
			"--web_port=" + strconv.Itoa(web), "--log_kind=json"}, c.serverFlags...),
		PortFlag: "--job_port", LogPath: filepath.Join(logDir(t), "backpressure-"+c.name+".log"), Grace: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	conn, err := grpc.NewClient(p.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cli := jobpb.NewJobServiceClient(conn)
	workers := []string{"--workers_per_environment=1"}
	if len(c.jobFlags) > 0 {
		workers = nil // autoscaling starts each environment at --min_workers
	}
	args := slices.Concat([]string{c.exp, c.boot, bpTopic, fmt.Sprint(bpCostMs), "--runner=PortableRunner", "--job_endpoint=" + p.Addr},
		workers, c.jobFlags)
	job := startPyJob(t, ctx, "kafka_backpressure-"+c.name, "kafka_backpressure.py", args...)
	waitRunning(t, ctx, cli, job.id)
	r := &bpResult{name: c.name, samples: sampleServer(t, ctx, cli, job.id, p.Pid(), stateDir, c)}
	r.slow, r.src = bpStages(t, web, job.id)
	r.series = scrapeSeries(t, web)
	if _, err := cli.Cancel(ctx, &jobpb.CancelJobRequest{JobId: job.id}); err != nil {
		t.Errorf("cancel %s: %v", job.id, err)
	}
	job.wait(t)
	// Read once the job has ended: the stream ends with it.
	r.messages = jobMessages(t, cli, job.id)
	r.log(t)
	return r
}

// sampleServer reads the server's RSS and its store's size on disk every
// bpEvery for the window (or until past the bound, with untilGrown),
// failing at once if the job ends.
func sampleServer(t *testing.T, ctx context.Context, cli jobpb.JobServiceClient, id string, pid int, stateDir string, c bpConfig) []memSample {
	t.Helper()
	var ss []memSample
	start := time.Now()
	tick := time.NewTicker(bpEvery)
	defer tick.Stop()
	for {
		s := memSample{at: time.Since(start), rssMiB: float64(procStatusKB(pid, "VmRSS")) / 1024, storeMiB: diskMiB(stateDir)}
		ss = append(ss, s)
		if s.at >= c.window {
			return ss
		}
		if grew, _ := grewPast(ss, flatWarm); c.untilGrown && len(grew) > 0 {
			return ss
		}
		st, err := cli.GetState(ctx, &jobpb.GetJobStateRequest{JobId: id})
		if err != nil || st.GetState() != jobpb.JobState_RUNNING {
			t.Fatalf("%s: job %s is %v (%v) after %v: %s", c.name, id, st.GetState(), err, s.at, lastChars(jobMessages(t, cli, id), 3000))
		}
		<-tick.C
	}
}

// diskMiB is what dir's files take on disk (allocated blocks), in MiB.
func diskMiB(dir string) float64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil // a spill file removed meanwhile
		}
		if info, err := d.Info(); err == nil {
			if st, ok := info.Sys().(*syscall.Stat_t); ok {
				n += st.Blocks * 512
			}
		}
		return nil
	})
	return float64(n) / (1 << 20)
}

// log reports the run's figures: the series summary, the bound's
// reference, the stages' rates and the lag.
func (r *bpResult) log(t *testing.T) {
	ss := r.samples
	i := slices.IndexFunc(ss, func(s memSample) bool { return s.at >= flatWarm })
	peakRSS, peakStore := 0.0, 0.0
	for _, s := range ss {
		peakRSS, peakStore = max(peakRSS, s.rssMiB), max(peakStore, s.storeMiB)
	}
	t.Logf("%s: %d samples over %v (RSS/store MiB): %s", r.name, len(ss), ss[len(ss)-1].at.Round(time.Second), seriesSummary(ss, 10*time.Second))
	if i >= 0 {
		t.Logf("%s: at %v RSS %.1f MiB, store %.1f MiB; peaks RSS %.1f MiB, store %.1f MiB; /metrics store %.1f MiB",
			r.name, ss[i].at.Round(time.Second), ss[i].rssMiB, ss[i].storeMiB, peakRSS, peakStore, r.series[`beam_runner_store_bytes{part="jobs"}`]/(1<<20)+r.series[`beam_runner_store_bytes{part="scratch"}`]/(1<<20))
	}
	t.Logf("%s: read stage %s: %d records read (Kafka lag %d), %s; slow stage %s: %d records in, %s",
		r.name, r.src.ID, r.src.ElementsOut, bpRecords-r.src.ElementsOut, r.src.Rates, r.slow.ID, r.slow.ElementsIn, r.slow.Rates)
}

// uiStage is a stage as the web UI's job view (/api/jobs/ID) has it.
type uiStage struct {
	ID          string   `json:"id"`
	Kind        string   `json:"kind"`
	Transforms  []string `json:"transforms"`
	Inputs      []string `json:"inputs"`
	Outputs     []string `json:"outputs"`
	ElementsIn  int64    `json:"elements_in"`
	ElementsOut int64    `json:"elements_out"`
	Rates       *uiRates `json:"rates"`
}

type uiRates struct {
	Slots          int      `json:"slots"`
	Busy           float64  `json:"busy_ms_per_sec"`
	Idle           float64  `json:"idle_ms_per_sec"`
	BackPressured  *float64 `json:"backpressured_ms_per_sec"`
	ProcessingRate float64  `json:"processing_rate"`
	ObservedIn     float64  `json:"observed_in"`
	ObservedOut    float64  `json:"observed_out"`
	Backlog        *float64 `json:"backlog"`
}

func (r *uiRates) String() string {
	if r == nil {
		return "no rates"
	}
	opt := func(p *float64) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprintf("%.0f", *p)
	}
	return fmt.Sprintf("busy %.0f, idle %.0f, back-pressured %s ms/s on %d slots, λp %.0f/s, observed in %.0f/s out %.0f/s, backlog %s",
		r.Busy, r.Idle, opt(r.BackPressured), r.Slots, r.ProcessingRate, r.ObservedIn, r.ObservedOut, opt(r.Backlog))
}

// bpStages finds, in the UI's view of the job, the slow stage (the one
// running SlowStage) and its upstream SDK stage (KafkaIO's read), walking
// up through runner stages.
func bpStages(t *testing.T, web int, id string) (slow, src uiStage) {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://localhost:%d/api/jobs/%s", web, id))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var view struct {
		Stats struct {
			Stages []uiStage `json:"stages"`
		} `json:"stats"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&view); err != nil {
		t.Fatalf("/api/jobs/%s: %v", id, err)
	}
	stages := view.Stats.Stages
	i := slices.IndexFunc(stages, func(s uiStage) bool {
		return slices.ContainsFunc(s.Transforms, func(n string) bool { return strings.Contains(n, "SlowStage") })
	})
	if i < 0 {
		t.Fatalf("job %s: no stage runs SlowStage: %+v", id, stages)
	}
	slow = stages[i]
	for cur := slow; len(cur.Inputs) > 0; {
		j := slices.IndexFunc(stages, func(s uiStage) bool { return slices.Contains(s.Outputs, cur.Inputs[0]) })
		if j < 0 {
			break
		}
		if cur = stages[j]; cur.Kind == "sdk" {
			return slow, cur
		}
	}
	t.Fatalf("job %s: no SDK stage upstream of the slow stage %s: %+v", id, slow.ID, stages)
	return
}

// checkHeld: while flow control holds the read, the UI's view and
// /metrics show the slow stage busy and the read back-pressured, and most
// records are still in Kafka.
func checkHeld(t *testing.T, r *bpResult) {
	t.Helper()
	if r.slow.Rates == nil || r.slow.Rates.Busy < 700 {
		t.Errorf("%s: the UI shows the slow stage %s %v, want busy ≥ 700 ms/s", r.name, r.slow.ID, r.slow.Rates)
	}
	// Held time is the stage's wall time held, shown per bundle slot: a
	// read of two partitions (two slots) held throughout shows 500 ms/s.
	if r.src.Rates == nil || r.src.Rates.BackPressured == nil || *r.src.Rates.BackPressured < 400 {
		t.Errorf("%s: the UI shows the read %s %v, want back-pressured ≥ 400 ms/s", r.name, r.src.ID, r.src.Rates)
	}
	busy := r.stageSeries("beam_runner_stage_busy_ms_per_second", r.slow.ID)
	held := r.stageSeries("beam_runner_stage_backpressured_ms_per_second", r.src.ID)
	if busy < 700 || held < 400 {
		t.Errorf("%s: /metrics shows the slow stage %s busy %.0f ms/s and the read %s back-pressured %.0f ms/s, want ≥ 700 and ≥ 400",
			r.name, r.slow.ID, busy, r.src.ID, held)
	}
	if lag := bpRecords - r.src.ElementsOut; lag < bpRecords/2 {
		t.Errorf("%s: the read took %d of Kafka's %d records (lag %d): the backlog did not stay in Kafka", r.name, r.src.ElementsOut, bpRecords, lag)
	}
}

// stageSeries is a stage's gauge in /metrics (-1 when absent).
func (r *bpResult) stageSeries(name, stage string) float64 {
	for series, v := range r.series {
		if strings.HasPrefix(series, name+"{") && strings.Contains(series, `stage="`+stage+`"`) {
			return v
		}
	}
	return -1
}

var scaleLine = regexp.MustCompile(`autoscaling \(DS2\): env (\S+): (\d+) -> (\d+) workers`)

// checkScaledUp: DS2 added workers to an environment while the backlog
// waited, as job messages say; the slow stage's rate against the run with
// one worker is reported.
func checkScaledUp(t *testing.T, r, fixed *bpResult) {
	t.Helper()
	ups := 0
	for _, m := range scaleLine.FindAllStringSubmatch(r.messages, -1) {
		t.Logf("%s: decision: env %s: %s -> %s workers", r.name, m[1], m[2], m[3])
		from, _ := strconv.Atoi(m[2])
		to, _ := strconv.Atoi(m[3])
		if to > from {
			ups++
		}
	}
	for _, line := range strings.Split(r.messages, " | ") {
		if strings.Contains(line, "autoscaling (DS2)") {
			t.Logf("%s: %s", r.name, lastChars(line, 1500))
		}
	}
	if ups == 0 {
		t.Errorf("%s: no scale-up among the job's messages while %d records waited: %s", r.name, bpRecords-r.src.ElementsOut, lastChars(r.messages, 3000))
	}
	rate := func(x *bpResult) float64 {
		return float64(x.slow.ElementsIn) / x.samples[len(x.samples)-1].at.Seconds()
	}
	t.Logf("the slow stage took %.0f records/s with DS2 (%d in %v), %.0f/s on one worker (%d in %v)",
		rate(r), r.slow.ElementsIn, r.samples[len(r.samples)-1].at.Round(time.Second),
		rate(fixed), fixed.slow.ElementsIn, fixed.samples[len(fixed.samples)-1].at.Round(time.Second))
}
