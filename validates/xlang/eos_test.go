//go:build xlang

package xlang

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/beam-runner/beam-runner/testsupport/jobtest"
	"github.com/beam-runner/beam-runner/testsupport/serverproc"
	"github.com/beam-runner/beam-runner/testsupport/testwait"
)

// The exactly-once check's input: eosN records over eosWindows windows of
// eosKeys keys; its sink writes eosShards shards.
const (
	eosN       = 100_000
	eosWindows = 4
	eosKeys    = 500
	eosShards  = 2
	eosGroup   = "eos-sink"
)

// TestKafkaExactlyOnce runs KafkaEosCounts.java (KafkaIO read, fixed
// windows, a count per key and window, KafkaIO's exactly-once write) as a
// streaming job on local Java workers, updates it in place with a new
// build of the same pipeline (--update: the job stops at a savepoint and
// the new one starts from it), SIGKILLs the server twice at random
// points and restarts it on the same --state_dir, and reads the output
// topic with read_committed: every (key, window) count once and exact,
// their sum the input's size. Then it drains the job.
//
// KafkaIO's sink cannot recover, by design and on any runner, from one
// point: after a shard's first transaction committed to Kafka and before
// the runner checkpointed the writer id that the bundle stored with it
// (on restore it finds Kafka metadata and no state to match, and refuses:
// KafkaExactlyOnceSink's case c). The runner's checkpoints hand a running
// bundle's input back rather than wait for it. So the input comes in two
// halves: the first, a window (and four records of the next), is counted
// and written before any kill, and the kills come once its writes are
// checkpointed; the second, two windows more and two records per partition
// in a window after them, is read, counted and written while the server
// dies and comes back. The update comes between the halves, once the
// first one's writes are checkpointed, for the same reason: a savepoint
// is a checkpoint, and a bundle running at it is handed back too. The
// new job must take over the read positions and the sink's writer ids
// and sequence numbers (a count written again, a sequence restarted or
// a record lost fails the checks below), and its Java harnesses must
// read the options the runner adds. The watermark follows the records'
// times alone (KafkaEosCounts.java), so each window fires once the next
// one's records are read, whatever the clock, and the last one at the
// drain.
func TestKafkaExactlyOnce(t *testing.T) {
	t.Parallel() // a broker and servers of its own; mostly waiting on JVMs
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	boot := startBroker(t, "kafka-eos")
	in, out := "eos-in", "eos-out"
	build := compileEOS(t, ctx, boot, in, out)
	p, opts, err := build.translate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	base := (time.Now().Add(-10*time.Minute).UnixMilli() / windowMs) * windowMs
	first := firstHalf(base)
	produce(t, ctx, boot, in, first)
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	t.Logf("kill points from seed %d", seed)

	srv := newCrashingServer(t)
	id := jobtest.SubmitStaged(t, ctx, srv.client(t), p, opts, eosJobName)
	// The update's pipeline, built again while the first half is counted.
	rebuilt := build.translateAsync(ctx)
	waitRunning(t, ctx, srv.client(t), id)
	waitOutput(t, ctx, srv, boot, out, id, eosKeys)
	// The writers' bundles end right after their last commit (the next
	// window fires only once the second half is read); two checkpoints
	// later both hold them.
	srv.waitCheckpoints(t, ctx, id, 2)
	t.Logf("the first window's counts are written and checkpointed")
	next := <-rebuilt
	if next.err != nil {
		t.Fatal(next.err)
	}
	id = updateJob(t, ctx, srv, id, eosJobName, next.p, next.opts)

	second := secondHalf(base + 2*windowMs)
	produce(t, ctx, boot, in, second)
	// The first kill falls while the second half is read and counted, the
	// second once its first window has begun to be written: within the
	// writes or after them, while the last window waits for the drain.
	for kill := 1; kill <= 2; kill++ {
		if kill == 2 {
			waitOutput(t, ctx, srv, boot, out, id, eosKeys+3)
		}
		// A random point, counted in the job's own checkpoints (one a
		// second) rather than on a clock: it lands within the work
		// however loaded the machine is.
		srv.waitCheckpoints(t, ctx, id, rng.Intn(eosKillWithin))
		srv.kill(t)
		srv.start(t)
		srv.waitLog(t, ctx, id, "job resumed from its checkpoint")
	}
	want := expectedCounts(append(first, second...), windowMs)
	// All but the last window's counts; the drain fires that one.
	waitOutput(t, ctx, srv, boot, out, id, len(want)-2)
	drainAndCheck(t, ctx, srv, boot, out, id, want)
}

// drainAndCheck drains job id and checks what it wrote to topic out:
// the counts want, once each; no element dropped as late; the job
// DRAINED; and the sink's sequence ids numbering the records.
func drainAndCheck(t *testing.T, ctx context.Context, srv *crashingServer, boot, out, id string, want []string) {
	t.Helper()
	drain := exec.CommandContext(ctx, srv.bin, "drain", "--endpoint="+srv.proc.Addr, "--wait", "--timeout=2m", id)
	if b, err := drain.CombinedOutput(); err != nil {
		t.Fatalf("beam-runner drain %s: %v\n%s", id, err, b)
	}
	// Read once the job has ended: nothing it wrote late is missed.
	got, err := kafkaClient(t, ctx, "", "consume", boot, out, fmt.Sprint(len(want)), "60000")
	if err != nil {
		t.Fatal(err)
	}
	checkCounts(t, consumedLines(got), want)
	checkNoneDropped(t, ctx, srv.client(t), id)
	checkDrained(t, srv, id)
	// The sink's own bookkeeping: one sequence id per record it wrote.
	meta, err := kafkaClient(t, ctx, "", "committed", boot, eosGroup, out, fmt.Sprint(eosShards), "30000")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := shardSeqs(meta); err != nil || n != int64(len(want)) {
		t.Errorf("the sink's shards committed %d records (%v), want %d:\n%s", n, err, len(want), meta)
	}
}

// eosJobName is the job's name, as KafkaEosCounts.java sets it too.
const eosJobName = "kafka-eos"

// eosKillWithin bounds each kill's random delay, in checkpoints saved (one
// a second): about as long as the second half takes to be read and counted.
const eosKillWithin = 10

// firstHalf is eosN/2 records: all but nextRecords in the window at base,
// the rest in the next window, so that the first window fires once both
// partitions are read past it.
func firstHalf(base int64) []record {
	return append(orderedRecords(eosN/2-nextRecords, 1, eosKeys, base, windowMs), nextWindow(base+windowMs, "next")...)
}

// secondHalf is eosN/2 records: all but nextRecords over the two windows
// from base, the rest in the window after them, which fires only at the
// drain.
func secondHalf(base int64) []record {
	return append(orderedRecords(eosN/2-nextRecords, 2, eosKeys, base, windowMs), nextWindow(base+2*windowMs, "last")...)
}

// nextRecords is how many records nextWindow makes: two per partition.
// KafkaIO's reader sets its watermark from a record's predecessors before
// it outputs the record, and a checkpoint (the runner checkpoints a read
// every second) keeps the watermark set so far: a partition's last record
// moves its watermark only once another follows it. The second record is
// that one.
const nextRecords = 4

// nextWindow is nextRecords records at the start of the window at start,
// over two keys; they are produced round robin, so each partition gets
// half, and its watermark passes the window before once they are read.
func nextWindow(start int64, value string) []record {
	var recs []record
	for i := range nextRecords {
		recs = append(recs, record{ts: start + int64(i), key: fmt.Sprintf("k%03d", i%2), value: fmt.Sprintf("%s%d", value, i)})
	}
	return recs
}

func produce(t *testing.T, ctx context.Context, boot, topic string, recs []record) {
	t.Helper()
	if _, err := kafkaClient(t, ctx, producerInput(recs), "produce", boot, topic); err != nil {
		t.Fatal(err)
	}
}

// checkNoneDropped: no GroupByKey of the job dropped an element as late
// (the runner's droppedDueTo* counters): a crash must not make records
// late that were not.
func checkNoneDropped(t *testing.T, ctx context.Context, cli jobpb.JobServiceClient, id string) {
	t.Helper()
	resp, err := cli.GetJobMetrics(ctx, &jobpb.GetJobMetricsRequest{JobId: id})
	if err != nil {
		t.Fatalf("job %s metrics: %v", id, err)
	}
	for _, mi := range resp.GetMetrics().GetCommitted() {
		if name := mi.GetLabels()["NAME"]; strings.HasPrefix(name, "droppedDueTo") {
			n, _ := binary.Uvarint(mi.GetPayload())
			t.Errorf("GroupByKey %s: %s = %d", mi.GetLabels()["PTRANSFORM"], name, n)
		}
	}
}

// checkDrained: the job ended DRAINED, as its messages say.
func checkDrained(t *testing.T, srv *crashingServer, id string) {
	t.Helper()
	if msgs := jobMessages(t, srv.client(t), id); !strings.HasSuffix(msgs, "DRAINED") {
		t.Errorf("job %s did not end DRAINED: %s", id, lastChars(msgs, 3000))
	}
}

// checkCounts compares the sink's records with the expected counts, and
// says how many were lost or doubled.
func checkCounts(t *testing.T, got, want []string) {
	t.Helper()
	sum := 0
	seen := map[string]int{}
	for _, line := range got {
		var key string
		var start int64
		var n int
		if _, err := fmt.Sscan(line, &key, &start, &n); err != nil {
			t.Fatalf("output record %q: %v", line, err)
		}
		sum += n
		seen[fmt.Sprint(key, start)]++
	}
	dups := 0
	for _, n := range seen {
		dups += n - 1
	}
	if sum != eosN || dups != 0 {
		t.Errorf("the counts add up to %d, want %d; %d (key, window) pairs written more than once", sum, eosN, dups)
	}
	if d := shortDiff(got, want, 2000); d != "" {
		t.Errorf("%d records read back, %d expected: %s", len(got), len(want), d)
	}
}

// waitOutput waits until n records can be read from topic, failing at
// once if the job ends first.
func waitOutput(t *testing.T, ctx context.Context, srv *crashingServer, boot, topic, id string, n int) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := kafkaClient(t, ctx, "", "consume", boot, topic, fmt.Sprint(n), "240000")
		done <- err
	}()
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			return
		case <-time.After(time.Second):
		}
		st, err := srv.client(t).GetState(ctx, &jobpb.GetJobStateRequest{JobId: id})
		if err == nil && st.GetState() != jobpb.JobState_RUNNING {
			t.Fatalf("job %s ended %v before writing its output: %s", id, st.GetState(), lastChars(jobMessages(t, srv.client(t), id), 3000))
		}
	}
}

// crashingServer is a beam-runner server that the test kills and starts
// again on the same store and artifact root, each run on a fresh port and
// log (server-N.log).
type crashingServer struct {
	bin, stateDir, artifacts, logs string
	extra                          []string // more server flags (the soak's web port)
	runs                           int
	proc                           *serverproc.Proc
	killed                         []*serverproc.Proc
	conn                           *grpc.ClientConn
}

func newCrashingServer(t *testing.T, extra ...string) *crashingServer {
	s := &crashingServer{bin: runnerBin(t), stateDir: t.TempDir(), artifacts: t.TempDir(), logs: logDir(t), extra: extra}
	s.start(t)
	t.Cleanup(func() {
		if s.conn != nil {
			s.conn.Close()
		}
		s.proc.Stop()
		// The killed servers' process groups: workers that outlived them.
		for _, p := range s.killed {
			p.Stop()
		}
	})
	return s
}

func (s *crashingServer) start(t *testing.T) {
	t.Helper()
	s.runs++
	p, err := serverproc.Start(context.Background(), serverproc.Spec{
		Bin: s.bin,
		Args: append([]string{"--state_dir=" + s.stateDir, "--artifact_root=" + s.artifacts, "--checkpoint_interval=1s",
			"--sdk_containers=local", "--serve_http=false", "--log_kind=json", "--log_level=debug"}, s.extra...),
		PortFlag: "--job_port", LogPath: s.logPath(), Grace: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	s.proc = p
	if s.conn != nil {
		s.conn.Close()
	}
	if s.conn, err = grpc.NewClient(p.Addr, grpc.WithTransportCredentials(insecure.NewCredentials())); err != nil {
		t.Fatal(err)
	}
}

func (s *crashingServer) logPath() string {
	return filepath.Join(s.logs, fmt.Sprintf("eos-server-%d.log", s.runs))
}

func (s *crashingServer) client(t *testing.T) jobpb.JobServiceClient {
	return jobpb.NewJobServiceClient(s.conn)
}

// kill SIGKILLs the server process alone, as a crash would end it; its
// workers are left to notice.
func (s *crashingServer) kill(t *testing.T) {
	t.Helper()
	if err := syscall.Kill(s.proc.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-s.proc.Exited()
	t.Logf("killed server run %d", s.runs)
	s.killed = append(s.killed, s.proc)
}

// waitLog waits until the running server's log has msg for job id.
func (s *crashingServer) waitLog(t *testing.T, ctx context.Context, id, msg string) {
	t.Helper()
	if err := testwait.For(ctx, 5*time.Minute, func() (bool, error) { return s.logged(id, msg) > 0, nil }); err != nil {
		t.Fatalf("job %s: no %q in %s: %v", id, msg, s.logPath(), err)
	}
	t.Logf("server run %d: %s", s.runs, msg)
}

// waitCheckpoints waits until the running server has saved n more
// checkpoints of job id than it had when called.
func (s *crashingServer) waitCheckpoints(t *testing.T, ctx context.Context, id string, n int) {
	t.Helper()
	from := s.logged(id, "checkpoint saved")
	err := testwait.For(ctx, 5*time.Minute, func() (bool, error) { return s.logged(id, "checkpoint saved") >= from+n, nil })
	if err != nil {
		t.Fatalf("job %s: fewer than %d checkpoints saved after %d; log %s: %v", id, n, from, s.logPath(), err)
	}
}

// logged counts the running server's JSON log entries msg of job id.
func (s *crashingServer) logged(id, msg string) int {
	data, _ := os.ReadFile(s.logPath())
	n := 0
	for line := range strings.SplitSeq(string(data), "\n") {
		if strings.Contains(line, `"msg":"`+msg+`"`) && strings.Contains(line, `"job":"`+id+`"`) {
			n++
		}
	}
	return n
}

// waitRunning waits until job id is RUNNING; an end before fails the test.
func waitRunning(t *testing.T, ctx context.Context, cli jobpb.JobServiceClient, id string) {
	t.Helper()
	err := testwait.For(ctx, 5*time.Minute, func() (bool, error) {
		st, err := cli.GetState(ctx, &jobpb.GetJobStateRequest{JobId: id})
		if err != nil {
			return false, err
		}
		switch st.GetState() {
		case jobpb.JobState_FAILED, jobpb.JobState_CANCELLED, jobpb.JobState_DONE, jobpb.JobState_DRAINED:
			return false, fmt.Errorf("job %s ended %v: %s", id, st.GetState(), lastChars(jobMessages(t, cli, id), 3000))
		}
		return st.GetState() == jobpb.JobState_RUNNING, nil
	})
	if err != nil {
		t.Fatalf("job %s not RUNNING: %v", id, err)
	}
}

// jobMessages is the job's messages and states so far, " | " between,
// and a stream error at its end.
func jobMessages(t *testing.T, cli jobpb.JobServiceClient, id string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	msgs, err := jobtest.Messages(ctx, cli, id)
	if err != nil {
		msgs += " | (" + err.Error() + ")"
	}
	return msgs
}

// lastChars is s cut to its last n bytes.
func lastChars(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
