package execute

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"github.com/beam-runner/beam-runner/runner/spec"
	"strings"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/engine"
	"github.com/beam-runner/beam-runner/runner/jobs"
	"github.com/beam-runner/beam-runner/runner/userstate"
	"google.golang.org/protobuf/proto"
)

// Checkpoint format: the magic bytes, checkpointVersion as a uvarint, then
// sections, each a uvarint length and its bytes: the engine's snapshot
// (engine.SnapshotRequeuingFlight, its own versioned format), the
// user-state snapshot (userstate.Store.Snapshot, likewise), the committed
// metrics (jobpb.MetricResults) and, from version 2, the autoscaler's
// memory (savedScaling as JSON; empty when the job does not scale). All
// are taken at one consistent point of the driver, between two commits.
// Version 1 (three sections) is still read: a server upgrade resumes the
// jobs the older one checkpointed.
const (
	checkpointMagic   = "BRCKPT"
	checkpointVersion = 2
)

// sectionsOf is how many sections each readable version has.
var sectionsOf = map[uint64]int{1: 3, 2: 4}

// checkpoint is what a job needs to resume where it was.
type checkpoint struct {
	engine  []byte
	state   []byte
	metrics []*pipepb.MonitoringInfo
	scaling []byte
}

func (c checkpoint) encode() ([]byte, error) {
	m, err := proto.Marshal(&jobpb.MetricResults{Committed: c.metrics})
	if err != nil {
		return nil, fmt.Errorf("encoding metrics: %w", err)
	}
	out := append([]byte(checkpointMagic), binary.AppendUvarint(nil, checkpointVersion)...)
	for _, sec := range [][]byte{c.engine, c.state, m, c.scaling} {
		out = binary.AppendUvarint(out, uint64(len(sec)))
		out = append(out, sec...)
	}
	return out, nil
}

// decodeCheckpoint reads a checkpoint, refusing one of another format.
func decodeCheckpoint(data []byte) (checkpoint, error) {
	var c checkpoint
	rest, ok := bytes.CutPrefix(data, []byte(checkpointMagic))
	if !ok {
		return c, fmt.Errorf("not a beam-runner checkpoint")
	}
	v, n := binary.Uvarint(rest)
	if n <= 0 {
		return c, fmt.Errorf("checkpoint: damaged version")
	}
	nsec, ok := sectionsOf[v]
	if !ok {
		return c, fmt.Errorf("checkpoint format version %d; this beam-runner reads versions 1 to %d", v, checkpointVersion)
	}
	rest = rest[n:]
	secs := make([][]byte, 4)
	for i := range nsec {
		l, n := binary.Uvarint(rest)
		if n <= 0 || l > uint64(len(rest)-n) {
			return c, fmt.Errorf("checkpoint: section %d is damaged or cut short", i)
		}
		secs[i], rest = rest[n:n+int(l)], rest[n+int(l):]
	}
	if len(rest) > 0 {
		return c, fmt.Errorf("checkpoint: %d bytes after its last section", len(rest))
	}
	var m jobpb.MetricResults
	if err := proto.Unmarshal(secs[2], &m); err != nil {
		return c, fmt.Errorf("checkpoint metrics: %w", err)
	}
	return checkpoint{engine: secs[0], state: secs[1], metrics: m.GetCommitted(), scaling: secs[3]}, nil
}

// checkpointPolicy decides when the driver checkpoints: right after a
// commit (a consistent point, and something new to save; an idle job
// does not rewrite the same state), once interval has passed since the
// last checkpoint or the run's start. A checkpoint copies what the job
// buffers, so the interval stretches to costShare times what the last
// one took; a batch job, which may buffer gigabytes, stops its periodic
// checkpoints once one is larger than maxBytes (a restart then resumes
// from the last one kept). Pure: the driver passes the time.
type checkpointPolicy struct {
	interval time.Duration // 0: never
	last     time.Time
	maxBytes int // 0: no limit
	// flight: when a checkpoint is due, source bundles checkpoint
	// themselves first (prepareCheckpoint). Batch jobs only: a streaming
	// source's residual would start while its bundle still reads the same
	// partition (KafkaIO's cached consumer refuses such a second reader).
	flight  bool
	cost    time.Duration // what the last checkpoint took, snapshot and write
	stopped bool
}

// costShare bounds the time checkpoints take to about 1/costShare of a run's.
const costShare = 10

// due reports whether a commit at now should be followed by a checkpoint.
func (p *checkpointPolicy) due(now time.Time) bool {
	return p.interval > 0 && !p.stopped && now.Sub(p.last) >= max(p.interval, costShare*p.cost)
}

// taken records a checkpoint attempted at now, written or not: a state
// that cannot be saved is not retried on every commit.
func (p *checkpointPolicy) taken(now time.Time) { p.last = now }

// measured records what a checkpoint took and its size; it reports
// whether periodic checkpoints stop here (the first time only).
func (p *checkpointPolicy) measured(took time.Duration, size int) bool {
	p.cost = took
	if p.maxBytes > 0 && size > p.maxBytes && !p.stopped {
		p.stopped = true
		return true
	}
	return false
}

// spilled reports whether a job that spilled n bytes stops its periodic
// checkpoints here: a snapshot would read them back into memory.
func (p *checkpointPolicy) spilled(n int64) bool {
	if p.maxBytes <= 0 || n <= int64(p.maxBytes) || p.stopped {
		return false
	}
	p.stopped = true
	return true
}

// batchCheckpointBytes is the largest checkpoint a batch job keeps taking
// without a memory limit; with one, a quarter of it. A checkpoint is
// built in memory, a few copies of what the job buffers.
const batchCheckpointBytes = 256 << 20

func batchCheckpointLimit(memoryLimit int64) int {
	if memoryLimit > 0 {
		return int(min(memoryLimit/4, 1<<40))
	}
	return batchCheckpointBytes
}

// newEngine builds the job's engine: fresh, or on a resumed job restored
// from its checkpoint with the user state and metrics saved with it. It
// returns the checkpoint policy for the job too: jobs with a durable
// record checkpoint, batch ones while their checkpoints stay small
// (checkpointPolicy), so that after a restart they go on from there
// rather than from the beginning.
func (r *run) newEngine(now time.Time) (*engine.Engine, checkpointPolicy, error) {
	pol := checkpointPolicy{last: now}
	es, err := spec.Build(r.plan, spec.Config{
		Parallelism: r.opts.Parallelism, MaxAttempts: r.opts.MaxBundleAttempts, StartTime: now.UnixMilli(),
		Options: r.job.Options, Space: r.spill.Spaces(),
		MemoryLimit: r.opts.Memory.Limit, BoundPending: r.opts.Memory.BoundPending, EnvBundles: r.envBundles(),
		ScaledMax:        r.scaledMax(),
		EnvWorkers:       r.pool.EnvWorkers(),
		CombineTreeBytes: r.opts.CombineTreeBytes,
		FlowControl:      r.opts.FlowControl,
	})
	if err != nil {
		return nil, pol, err
	}
	r.streaming = es.Streaming
	// A batch job with LOOPBACK workers cannot resume (its workers die
	// with its client): its checkpoints would never be read.
	if r.job.Durable() && (es.Streaming || !jobs.LoopbackOptions(r.job.Options)) {
		pol.interval = r.opts.CheckpointInterval
		if !es.Streaming {
			pol.maxBytes = batchCheckpointLimit(r.opts.Memory.Limit)
			pol.flight = true
		}
	}
	eng, err := r.restoreEngine(es)
	return eng, pol, err
}

func (r *run) restoreEngine(spec engine.Spec) (*engine.Engine, error) {
	if r.job.Resume == nil {
		return engine.New(spec)
	}
	c, err := decodeCheckpoint(r.job.Resume)
	if err != nil {
		return nil, fmt.Errorf("resuming job %s: %w", r.job.ID, err)
	}
	eng, err := engine.Restore(spec, c.engine)
	if err != nil {
		return nil, fmt.Errorf("resuming job %s from its checkpoint: %w", r.job.ID, err)
	}
	st, err := userstate.RestoreStore(c.state)
	if err != nil {
		return nil, fmt.Errorf("resuming job %s: its user state: %w", r.job.ID, err)
	}
	r.state = st
	r.resumedScaling = c.scaling
	r.metrics.AddBundle(c.metrics)
	r.job.SetMetrics(r.metrics.Results())
	msg := r.resumedMessage(eng.Finished())
	r.log.Info("job resumed from its checkpoint", "where", msg, "engine_bytes", len(c.engine), "state_bytes", len(c.state))
	r.job.Message(jobpb.JobMessage_JOB_MESSAGE_BASIC, msg)
	return eng, nil
}

// resumedMessage says where a resumed job goes on: which of its stages
// had finished at the checkpoint and do not run again.
func (r *run) resumedMessage(finished []string) string {
	done := map[string]bool{}
	for _, id := range finished {
		done[id] = true
	}
	var names []string
	for _, s := range r.plan.Stages {
		if done[s.ID] {
			names = append(names, r.stageName(s))
		}
	}
	from := "job resumed from its checkpoint"
	if r.job.Updates != "" {
		from = fmt.Sprintf("job updated job %s from savepoint %s", r.job.Updates, r.job.Savepoint)
	} else if r.job.Savepoint != "" {
		from = "job started from savepoint " + r.job.Savepoint
	}
	if len(names) == 0 {
		return fmt.Sprintf("%s: none of its %d stages had finished; each goes on from where the checkpoint left it", from, len(r.plan.Stages))
	}
	return fmt.Sprintf("%s: %d of its %d stages had finished and do not run again (%s); the others go on from where the checkpoint left them",
		from, len(names), len(r.plan.Stages), strings.Join(names, "; "))
}

// checkpoint saves the engine, user state and metrics as they are between
// two commits; bundles still running give their input back in the saved
// engine (SnapshotRequeuingFlight), so they need not stop. The snapshot is
// taken here, on the driver goroutine, at that consistent point, with
// spilled input referenced (engine.TakeSnapshot); reading that back,
// writing it and its fsync is a command, writes one at a time in order. The
// returned channel is closed once the checkpoint is written or given up:
// a failure costs only the checkpoint, and the job goes on. Trigger says
// why it is taken, for the job page's history.
func (d *driver) checkpoint(ctx context.Context, trigger string) <-chan struct{} {
	r, done, start := d.r, make(chan struct{}), time.Now()
	if d.spilledTooMuch() {
		close(done)
		return done
	}
	snap, err := d.eng.TakeSnapshot()
	if err != nil {
		r.log.Warn("checkpoint skipped", "err", err)
		close(done)
		return done
	}
	c := checkpoint{state: r.state.Snapshot(), metrics: r.metrics.Results(), scaling: d.scaleSnapshot()}
	d.seq++
	taking := time.Since(start)
	prev := d.saving
	d.saving = done
	d.command(ctx, func(context.Context) func() error {
		if prev != nil {
			<-prev // a write is not cancelled: it ends by itself
		}
		writing := time.Now()
		// Spilled input the snapshot references is read back here, off
		// the driver.
		var data []byte
		engine, err := snap.Bytes()
		if err == nil {
			c.engine = engine
			data, err = c.encode()
		}
		if err == nil {
			err = r.job.Checkpoint(data)
		}
		took := taking + time.Since(writing)
		// Logged before the bundles waiting for it start, as on the
		// driver goroutine.
		if err != nil {
			r.log.Warn("checkpoint not saved", "err", err)
		} else {
			r.log.Debug("checkpoint saved", "bytes", len(data), "took", took)
		}
		close(done)
		return func() error {
			if d.saving == done {
				d.saving = nil
			}
			d.checkpointMeasured(took, len(data))
			ev := jobs.CheckpointEvent{At: time.Now().UnixMilli(), Bytes: int64(len(data)), DurationMs: took.Milliseconds(), Trigger: trigger}
			if err != nil {
				ev.Error = err.Error()
			}
			r.job.Stats().AddCheckpoint(ev)
			return nil
		}
	})
	return done
}

// spilledTooMuch stops a batch job's checkpoints before a snapshot would
// read back more than a checkpoint may hold: a snapshot holds what the
// job spilled, in memory.
func (d *driver) spilledTooMuch() bool {
	if d.ckpt.maxBytes <= 0 {
		return false
	}
	n, err := d.r.spill.Bytes()
	if err != nil || !d.ckpt.spilled(n) {
		return false
	}
	d.checkpointsStopped(fmt.Sprintf("it has spilled %d MiB, more than the %d MiB a batch job's checkpoint may hold", n>>20, d.ckpt.maxBytes>>20))
	return true
}

// checkpointsStopped says, in the log and the job's messages, why the
// job's periodic checkpoints stopped.
func (d *driver) checkpointsStopped(why string) {
	msg := "checkpoints of this batch job stop: " + why + "; after a server restart it goes on from its last checkpoint"
	d.r.log.Warn(msg)
	d.r.job.Message(jobpb.JobMessage_JOB_MESSAGE_WARNING, msg)
}

// checkpointMeasured tells the policy what a checkpoint cost, and says
// so if that stops the job's periodic checkpoints.
func (d *driver) checkpointMeasured(took time.Duration, size int) {
	if !d.ckpt.measured(took, size) {
		return
	}
	d.checkpointsStopped(fmt.Sprintf("one took %d MiB, more than the %d MiB a batch job's may take", size>>20, d.ckpt.maxBytes>>20))
}

// checkpointNow records a checkpoint taken at now with the policy and
// takes it after handing out what is ready (see checkpoint).
func (d *driver) checkpointNow(ctx context.Context, now time.Time, trigger string) <-chan struct{} {
	d.ckpt.taken(now)
	d.advance()
	return d.checkpoint(ctx, trigger)
}

// prepareCheckpoint runs on every tick: once a checkpoint is due, source
// bundles that have run half an interval are asked to checkpoint
// themselves (engine.CheckpointFlight). Their commits are where the
// checkpoint is taken, and it holds what they read; a checkpoint taken
// while they ran would hold only their input, read again after a crash.
func (d *driver) prepareCheckpoint(now time.Time) {
	if d.ckpt.flight && d.ckpt.due(now) {
		d.eng.CheckpointFlight(d.ckpt.interval.Milliseconds() / 2)
	}
}
