package execute

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal/extworker"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/beam-runner/beam-runner/runner/jobs"
	"github.com/beam-runner/beam-runner/runner/placement"
	"github.com/beam-runner/beam-runner/runner/workers"
	"github.com/beam-runner/beam-runner/testsupport/gopipe"
	"github.com/beam-runner/beam-runner/testsupport/syncbuf"
	"github.com/beam-runner/beam-runner/testsupport/testwait"
	"github.com/beam-runner/beam-runner/worker"
)

func init() {
	beam.RegisterFunction(untilPoolJoins)
	beam.RegisterFunction(untilPoolLeft)
	beam.RegisterFunction(untilPoolDrained)
}

// poolJoined, poolLeft and poolDrained close when the runner logs a
// worker of the joining pool connected, the leaving pool left, and its
// worker stopped; the harnesses run in this process, so globals reach
// the DoFns.
var poolJoined, poolLeft, poolDrained chan struct{}

func untilPoolLeft(s string) (string, error) {
	if err := testwait.ClosedErr(time.Minute, poolLeft); err != nil {
		return "", fmt.Errorf("the leaving pool was not retired: %w", err)
	}
	return s, nil
}

func untilPoolJoins(s string) (string, error) {
	if err := testwait.ClosedErr(time.Minute, poolJoined); err != nil {
		return "", fmt.Errorf("no worker of the joining pool connected: %w", err)
	}
	return s, nil
}

func untilPoolDrained(s string) (string, error) {
	if err := testwait.ClosedErr(time.Minute, poolDrained); err != nil {
		return "", fmt.Errorf("the leaving pool's worker was not drained and stopped: %w", err)
	}
	return s, nil
}

// podAt serves a Go worker pool at ip:port, as a pod of a headless
// Service: a TCP relay to a real pool on another port of localhost.
func podAt(t *testing.T, ctx context.Context, ip string, port int) {
	t.Helper()
	pool, err := extworker.StartLoopback(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Stop(context.Background()) })
	target := pool.EnvironmentConfig(ctx)
	lis, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
	if err != nil {
		t.Skipf("cannot listen on %s (loopback addresses beyond 127.0.0.1): %v", ip, err)
	}
	t.Cleanup(func() { lis.Close() })
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			go relay(c, target)
		}
	}()
}

func relay(c net.Conn, target string) {
	defer c.Close()
	up, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer up.Close()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); io.Copy(up, c); up.(*net.TCPConn).CloseWrite() }()
	go func() { defer wg.Done(); io.Copy(c, up); c.(*net.TCPConn).CloseWrite() }()
	wg.Wait()
}

// pods is a headless Service's DNS: the addresses its name resolves to,
// which the test changes as pods come and go.
type pods struct {
	mu    sync.Mutex
	addrs []string
}

func (p *pods) set(addrs ...string) { p.mu.Lock(); p.addrs = addrs; p.mu.Unlock() }
func (p *pods) lookup(_ context.Context, host string) ([]string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if host != "pool.pods.test" {
		return nil, fmt.Errorf("no such host %s", host)
	}
	return append([]string(nil), p.addrs...), nil
}

// A running job uses a pod that joins its pool's Service, and drains the
// worker of one that leaves: the new pod's worker takes bundles while the
// job runs, the leaving pod's worker finishes its bundle, takes no more
// and is stopped, and every element comes out once.
func TestPoolPodsJoinAndLeaveMidJob(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	port, _ := strconv.Atoi(strings.Split(closedAddr(t), ":")[1])
	a, b, c := "127.0.0.1", "127.0.0.2", "127.0.0.3"
	for _, ip := range []string{a, b, c} {
		podAt(t, ctx, ip, port)
	}
	dns := &pods{}
	dns.set(a, b)
	poolJoined, poolLeft, poolDrained = make(chan struct{}), make(chan struct{}), make(chan struct{})
	podC, podA := net.JoinHostPort(c, strconv.Itoa(port)), net.JoinHostPort(a, strconv.Itoa(port))
	var log syncbuf.Buffer
	connected := make(chan struct{})
	watch := io.MultiWriter(&log, signalOn(connected, `msg="worker connected"`),
		signalOn(poolJoined, `msg="worker connected"`, "pool="+podC),
		signalOn(poolLeft, `msg="worker pool left"`, "pool="+podA),
		signalOn(poolDrained, `msg="scale-down: worker drained and stopped"`))
	go func() { // pod a goes once c's worker took part
		if testwait.ClosedErr(time.Minute, poolJoined) == nil {
			dns.set(b, c)
		}
	}()

	p, s := beam.NewPipelineWithRoot()
	// Each stage starts once the one before ended: the last, once pod a
	// left, so it cannot run on a's worker, which it waits to see stopped.
	joined := beam.ParDo(s, untilPoolJoins, beam.Create(s, "a", "b", "c"))
	left := beam.ParDo(s, untilPoolLeft, beam.Reshuffle(s, joined))
	passert.Equals(s, beam.ParDo(s, untilPoolDrained, beam.Reshuffle(s, left)), "a", "b", "c")
	spec, err := placement.ParsePools(fmt.Sprintf("go=pool.pods.test:%d/1", port))
	if err != nil {
		t.Fatal(err)
	}
	j := &jobs.Job{ID: "test", Name: t.Name()}
	if j.Pipeline, err = gopipe.Marshal(ctx, p, worker.URNExternal, worker.PoolsEndpoint); err != nil {
		t.Fatal(err)
	}
	e := New(Options{Workers: workers.Options{Pools: spec, StartTimeout: 20 * time.Second,
		Lookup: dns.lookup, PoolRefresh: 100 * time.Millisecond},
		Logger: slog.New(slog.NewTextHandler(watch, nil))})
	if err := e.Validate(j.Pipeline); err != nil {
		t.Fatal(err)
	}
	go func() { // pod c joins once the job's workers run
		if testwait.ClosedErr(time.Minute, connected) == nil {
			dns.set(a, b, c)
		}
	}()
	if err := e.Execute(ctx, j); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	out := log.String()
	for _, want := range []string{`msg="worker pool joined"`, "pool=" + podC, `msg="worker pool left"`, "pool=" + podA,
		`msg="scale-down: worker drained and stopped"`} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, "retrying bundle") {
		t.Errorf("a bundle was retried: the pods' changes cost work:\n%s", out)
	}
}
