//go:build xlang && soak

package xlang

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/beam-runner/beam-runner/testsupport/jobtest"
	"github.com/beam-runner/beam-runner/testsupport/testkit"
)

// TestKafkaSoak runs the exactly-once job (KafkaEosCounts.java) for
// SOAK_DURATION (default 1h) on records produced at SOAK_RATE a second
// (default 2,000) with create times of now, kills the server (SIGKILL)
// halfway and starts it again, then drains the job. Every minute it
// samples the server's RSS, open fds, goroutines and store size, the
// checkpoints' durations, and the latency of the counts: a window's count
// read back (read_committed) minus the window's end. It requires every
// count exact and once, and RSS, fds and store at the end within 10% of
// where they were after SOAK_WARMUP (default 5m), or 16 MiB, 16 fds and
// 16 MiB when those are more. Not in `make test`:
//
//	go test -tags 'xlang soak' -run TestKafkaSoak -timeout 2h -v ./validates/xlang
func TestKafkaSoak(t *testing.T) {
	dur, rate, warm := envDuration("SOAK_DURATION", time.Hour), testkit.EnvInt("SOAK_RATE", 2000), envDuration("SOAK_WARMUP", 5*time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), dur+20*time.Minute)
	defer cancel()
	boot := startBroker(t, "kafka-soak")
	in, out := "soak-in", "soak-out"
	p, opts := buildEOSPipeline(t, ctx, boot, in, out)
	// Producing first: the job's read fails while its topic does not exist.
	prod := startProducer(t, ctx, boot, in)
	start := time.Now()
	produced := make(chan struct{})
	go func() { prod.run(ctx, rate, dur); close(produced) }()
	web := freeTCPPort(t)
	srv := newCrashingServer(t, "--serve_http=true", "--web_port="+strconv.Itoa(web))
	id := jobtest.SubmitStaged(t, ctx, srv.client(t), p, opts, "kafka-soak")
	waitRunning(t, ctx, srv.client(t), id)
	lat := followCounts(t, ctx, boot, out, windowMs)
	var samples []soakSample
	restarted := false
	for tick := time.NewTicker(time.Minute); time.Since(start) < dur; {
		<-tick.C
		if !restarted && time.Since(start) >= dur/2 {
			srv.kill(t)
			srv.start(t)
			srv.waitLog(t, ctx, id, "job resumed from its checkpoint")
			restarted = true
		}
		s := sample(t, srv, web, id, lat, time.Since(start))
		t.Log(s)
		samples = append(samples, s)
	}
	<-produced
	prod.close()
	t.Logf("produced %d records in %v", prod.sent, time.Since(start).Round(time.Second))
	// The last windows fire at the drain (the watermark follows the records).
	drain := exec.CommandContext(ctx, srv.bin, "drain", "--endpoint="+srv.proc.Addr, "--wait", "--timeout=5m", id)
	if b, err := drain.CombinedOutput(); err != nil {
		t.Fatalf("beam-runner drain %s: %v\n%s", id, err, b)
	}
	lat.waitSum(ctx, prod.sent)
	checkSoakCounts(t, lat.lines(), prod.sent)
	checkNoneDropped(t, ctx, srv.client(t), id)
	writeSoakTable(t, samples, lat)
	checkFlat(t, samples, warm)
}

type soakSample struct {
	at               time.Duration
	rssMiB, storeMiB float64
	fds, goroutines  int
	ckpts            int
	ckptP50, ckptMax time.Duration
	latP50, latP99   int64
	counts           int
}

func (s soakSample) String() string {
	return fmt.Sprintf("%3.0f min: RSS %.0f MiB, %d fds, %d goroutines, store %.1f MiB, %d checkpoints (p50 %v, max %v), %d counts, latency p50 %d ms p99 %d ms",
		s.at.Minutes(), s.rssMiB, s.fds, s.goroutines, s.storeMiB, s.ckpts, s.ckptP50, s.ckptMax, s.counts, s.latP50, s.latP99)
}

// sample reads the server's process, /metrics and log, and the counts
// read back in the last minute.
func sample(t *testing.T, srv *crashingServer, web int, id string, c *countLog, at time.Duration) soakSample {
	pid := srv.proc.Pid()
	s := soakSample{at: at, rssMiB: float64(procStatusKB(pid, "VmRSS")) / 1024}
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	s.fds = len(fds)
	m := scrape(t, web)
	s.goroutines = int(m["go_goroutines"])
	s.storeMiB = m["beam_runner_store_bytes"] / (1 << 20)
	took := checkpointTimes(srv.logPath(), id, time.Now().Add(-time.Minute))
	s.ckpts = len(took)
	if len(took) > 0 {
		s.ckptP50, s.ckptMax = took[len(took)/2], took[len(took)-1]
	}
	lat := c.since(time.Now().Add(-time.Minute))
	s.counts = len(lat)
	s.latP50, s.latP99 = percentile(lat, 50), percentile(lat, 99)
	return s
}

// checkpointTimes lists, sorted, what the checkpoints of job id saved
// after since took, from the server's JSON log.
func checkpointTimes(logPath, id string, since time.Time) []time.Duration {
	data, _ := os.ReadFile(logPath)
	var out []time.Duration
	for line := range strings.SplitSeq(string(data), "\n") {
		if !strings.Contains(line, `"msg":"checkpoint saved"`) || !strings.Contains(line, `"job":"`+id+`"`) {
			continue
		}
		at, ok := jsonField(line, "time")
		ts, err := time.Parse(time.RFC3339Nano, at)
		if !ok || err != nil || ts.Before(since) {
			continue
		}
		if v, ok := jsonField(line, "took"); ok {
			ns, _ := strconv.ParseInt(v, 10, 64)
			out = append(out, time.Duration(ns))
		}
	}
	slices.Sort(out)
	return out
}

// jsonField is a top-level string or number field of a flat JSON line.
func jsonField(line, key string) (string, bool) {
	_, rest, ok := strings.Cut(line, `"`+key+`":`)
	if !ok {
		return "", false
	}
	if strings.HasPrefix(rest, `"`) {
		v, _, ok := strings.Cut(rest[1:], `"`)
		return v, ok
	}
	end := strings.IndexAny(rest, ",}")
	if end < 0 {
		return "", false
	}
	return rest[:end], true
}

func percentile(xs []int64, p int) int64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

// checkSoakCounts: every (key, window) count once, their sum what was produced.
func checkSoakCounts(t *testing.T, lines []string, produced int) {
	seen := map[string]bool{}
	sum, dups := 0, 0
	for _, l := range lines {
		var key string
		var start, n int64
		if _, err := fmt.Sscan(l, &key, &start, &n); err != nil {
			t.Fatalf("output record %q: %v", l, err)
		}
		k := fmt.Sprint(key, start)
		if seen[k] {
			dups++
		}
		seen[k] = true
		sum += int(n)
	}
	t.Logf("%d counts read back, adding up to %d; %d produced", len(lines), sum, produced)
	if sum != produced || dups > 0 {
		t.Errorf("the counts add up to %d, want %d; %d (key, window) counts written more than once", sum, produced, dups)
	}
}

// checkFlat: RSS, fds and store at the end within 10% (or a small floor)
// of the first sample after warm-up.
func checkFlat(t *testing.T, ss []soakSample, warm time.Duration) {
	i := slices.IndexFunc(ss, func(s soakSample) bool { return s.at >= warm })
	if i < 0 || i == len(ss)-1 {
		t.Fatalf("no samples after the warm-up of %v", warm)
	}
	from, to := ss[i], ss[len(ss)-1]
	for _, c := range []struct {
		what     string
		from, to float64
		floor    float64
	}{
		{"RSS (MiB)", from.rssMiB, to.rssMiB, 16},
		{"open fds", float64(from.fds), float64(to.fds), 16},
		{"store (MiB)", from.storeMiB, to.storeMiB, 16},
	} {
		if c.to > c.from+max(c.from/10, c.floor) {
			t.Errorf("%s grew from %.1f at %v to %.1f at the end", c.what, c.from, from.at.Round(time.Minute), c.to)
		}
	}
}

// writeSoakTable writes the samples as a Markdown table to SOAK_TABLE, if set.
func writeSoakTable(t *testing.T, ss []soakSample, c *countLog) {
	all := c.since(time.Time{})
	t.Logf("latency over the whole run: p50 %d ms, p99 %d ms, %d counts", percentile(all, 50), percentile(all, 99), len(all))
	path := os.Getenv("SOAK_TABLE")
	if path == "" {
		return
	}
	var b strings.Builder
	fmt.Fprintln(&b, "| min | RSS MiB | fds | goroutines | store MiB | checkpoints | checkpoint p50 / max | counts | latency p50 / p99 ms |")
	fmt.Fprintln(&b, "|---|---|---|---|---|---|---|---|---|")
	for _, s := range ss {
		fmt.Fprintf(&b, "| %.0f | %.0f | %d | %d | %.1f | %d | %v / %v | %d | %d / %d |\n", s.at.Minutes(), s.rssMiB, s.fds, s.goroutines,
			s.storeMiB, s.ckpts, s.ckptP50.Round(time.Millisecond), s.ckptMax.Round(time.Millisecond), s.counts, s.latP50, s.latP99)
	}
	fmt.Fprintf(&b, "\nWhole run: latency p50 %d ms, p99 %d ms over %d counts.\n", percentile(all, 50), percentile(all, 99), len(all))
	if err := os.WriteFile(filepath.Clean(path), []byte(b.String()), 0o644); err != nil {
		t.Error(err)
	}
}
