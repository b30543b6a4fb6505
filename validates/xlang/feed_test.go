//go:build xlang

package xlang

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/beam-runner/beam-runner/testsupport/testwait"
)

// The producer and the output follower of the long-running Kafka checks
// (the soak, the elastic benchmark): records at a rate with create times
// of now, and each count read back with its latency.

// producer feeds KafkaRecords.java produce at a steady rate, create time
// now, keys k000..k499 in turn.
type producer struct {
	mu   sync.Mutex
	w    io.WriteCloser
	cmd  *exec.Cmd
	sent int
}

func startProducer(t *testing.T, ctx context.Context, boot, topic string) *producer {
	cmd := kafkaRecords(t, ctx, "produce", boot, topic)
	w, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return &producer{w: w, cmd: cmd}
}

// kafkaRecords is KafkaRecords.java with args, its output to the caller.
func kafkaRecords(t *testing.T, ctx context.Context, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "java", append([]string{"-cp", javaLib(t, "kafka"), "KafkaRecords.java"}, args...)...)
}

// run writes rate records a second for d, in tenths of a second.
// Calls in turn step the rate (the elastic benchmark).
func (p *producer) run(ctx context.Context, rate int, d time.Duration) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for end := time.Now().Add(d); time.Now().Before(end) && ctx.Err() == nil; <-tick.C {
		p.mu.Lock()
		var b strings.Builder
		now := time.Now().UnixMilli()
		for range rate / 10 {
			fmt.Fprintf(&b, "%d\tk%03d\tv\n", now, p.sent%eosKeys)
			p.sent++
		}
		io.WriteString(p.w, b.String())
		p.mu.Unlock()
	}
}

func (p *producer) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.w.Close()
	p.cmd.Wait()
}

// countLog is what KafkaRecords.java follow read: per output record, its
// arrival and its window's end.
type countLog struct {
	windowMs int64 // the counts' window length
	mu       sync.Mutex
	all      []string
	lat      []outLatency
}

type outLatency struct {
	at time.Time
	ms int64
}

func followCounts(t *testing.T, ctx context.Context, boot, topic string, windowMs int64) *countLog {
	cmd := kafkaRecords(t, ctx, "follow", boot, topic)
	r, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	c := &countLog{windowMs: windowMs}
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			c.add(sc.Text())
		}
	}()
	return c
}

// add takes "ARRIVAL_MS<TAB>KEY<TAB>WINDOW_START_MS COUNT".
func (c *countLog) add(line string) {
	f := strings.SplitN(line, "\t", 3)
	if len(f) != 3 {
		return
	}
	arrival, err1 := strconv.ParseInt(f[0], 10, 64)
	var start, n int64
	_, err2 := fmt.Sscan(f[2], &start, &n)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.all = append(c.all, f[1]+" "+f[2])
	if err1 == nil && err2 == nil {
		c.lat = append(c.lat, outLatency{time.UnixMilli(arrival), arrival - (start + c.windowMs)})
	}
}

// waitSum waits until the counts read back add up to at least produced
// (or two minutes pass): the follower has read what the drained job
// wrote. A count written twice shows as a sum past produced.
func (c *countLog) waitSum(ctx context.Context, produced int) {
	testwait.For(ctx, 2*time.Minute, func() (bool, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		sum := 0
		for _, l := range c.all {
			var key string
			var start, n int64
			if _, err := fmt.Sscan(l, &key, &start, &n); err == nil {
				sum += int(n)
			}
		}
		return sum >= produced, nil
	})
}

func (c *countLog) lines() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.all)
}

// since returns the latencies of counts read after t.
func (c *countLog) since(t time.Time) []int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []int64
	for _, l := range c.lat {
		if l.at.After(t) {
			out = append(out, l.ms)
		}
	}
	return out
}

// envDuration is the duration in variable name, else def.
func envDuration(name string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(name)); err == nil && d > 0 {
		return d
	}
	return def
}
