package jobs

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/artifacts"
	"github.com/beam-runner/beam-runner/runner/store"
	"google.golang.org/protobuf/proto"
)

// Durable job records. Each job owns the store prefix "jobs/<id>/" (ids
// never contain '/'):
//
//	h        jobpb.JobInfo: id, name, pipeline options
//	p        the pipeline as run
//	d        the job's artifact directory, removed if a restart finds it
//	l/<seq>  the event log (state changes and kept messages), seq as a
//	         big-endian uint64 so keys sort in log order
//	m        the last metrics, as jobpb.MetricResults, written with the
//	         terminal state
//	k/<n>    the executor's checkpoints (opaque bytes) and kp, the one to
//	kp       resume from (checkpoint.go), deleted with the terminal state
//
// State changes are synced to disk; messages are only handed to the OS,
// which is enough to survive the server being killed. After begin, every
// write runs on the journal's writer (jwriter.go), in log order, with no
// lock held: a state change's caller waits for its sync, a message's does
// not.
const jobsPrefix = "jobs/"

func jobKey(id, part string) []byte { return []byte(jobsPrefix + id + "/" + part) }

func eventKey(id string, seq int) []byte {
	return binary.BigEndian.AppendUint64(jobKey(id, "l/"), uint64(seq))
}

// journal writes one job's record to the store as it changes. Its
// writes after begin run on its writer, in order; ckpt is the writer's.
type journal struct {
	st   *store.Store
	id   string
	log  *slog.Logger
	ckpt uint64 // number of the checkpoint to resume from; 0: none
	w    writer
}

// begin writes the job's header, pipeline and events so far, atomically.
func (jl *journal) begin(j *Job, events []*jobpb.JobMessagesResponse) {
	b := jl.st.NewBatch()
	jl.put(b, "h", &jobpb.JobInfo{JobId: j.ID, JobName: j.Name, PipelineOptions: j.Options})
	jl.put(b, "p", j.Pipeline)
	b.Set(jobKey(j.ID, "d"), []byte(j.ArtifactDir))
	for seq, ev := range events {
		jl.putEvent(b, seq, ev)
	}
	jl.commit(b, true)
}

// event queues the log entry at seq for writing; a terminal state goes
// with the job's final metrics. The returned channel is closed once a
// state is synced (nil for a message: it is only handed to the OS, and
// nobody waits for it).
func (jl *journal) event(seq int, ev *jobpb.JobMessagesResponse, metrics []*pipepb.MonitoringInfo) <-chan struct{} {
	if ev.GetStateResponse() == nil {
		jl.w.enqueue(func() { jl.writeEvent(seq, ev, metrics) })
		return nil
	}
	saved := make(chan struct{})
	jl.w.enqueue(func() {
		jl.writeEvent(seq, ev, metrics)
		close(saved)
	})
	return saved
}

// writeEvent writes the log entry at seq, on the writer.
func (jl *journal) writeEvent(seq int, ev *jobpb.JobMessagesResponse, metrics []*pipepb.MonitoringInfo) {
	b := jl.st.NewBatch()
	jl.putEvent(b, seq, ev)
	st := ev.GetStateResponse()
	end := st != nil && isTerminal(st.GetState())
	if end {
		jl.put(b, "m", &jobpb.MetricResults{Attempted: metrics, Committed: metrics})
		dropCheckpoints(b, jl.id) // a finished job never resumes
	}
	jl.commit(b, st != nil)
	if end && jl.ckpt > 0 {
		go jl.reclaimCheckpoints()
	}
}

// reclaimCheckpoints compacts the range of the ended job's deleted
// checkpoints, so their disk space (a streaming job's may be large) is
// given back now rather than at some later compaction.
func (jl *journal) reclaimCheckpoints() {
	if err := jl.st.Reclaim(jobKey(jl.id, ckptPart)); err != nil && !errors.Is(err, store.ErrClosed) {
		jl.log.Warn("giving back the disk space of the job's checkpoints", "job_id", jl.id, "error", err)
	}
}

func (jl *journal) putEvent(b *store.Batch, seq int, ev *jobpb.JobMessagesResponse) {
	v, err := proto.Marshal(ev)
	if err != nil {
		jl.log.Warn("job record: encoding an event", "job_id", jl.id, "error", err)
		return
	}
	b.Set(eventKey(jl.id, seq), v)
}

func (jl *journal) put(b *store.Batch, part string, m proto.Message) {
	v, err := proto.Marshal(m)
	if err != nil {
		jl.log.Warn("job record: encoding", "job_id", jl.id, "part", part, "error", err)
		return
	}
	b.Set(jobKey(jl.id, part), v)
}

// commit writes a batch; a failure costs durability, not the job.
func (jl *journal) commit(b *store.Batch, sync bool) {
	if err := b.Commit(sync); err != nil {
		jl.log.Warn("job record not saved", "job_id", jl.id, "error", err)
	}
}

// saved is one job's record as read back from the store.
type saved struct {
	info     jobpb.JobInfo
	pipeline pipepb.Pipeline
	dir      string
	events   []*jobpb.JobMessagesResponse
	metrics  jobpb.MetricResults
	ckpts    savedCheckpoints
	hasInfo  bool
}

// loadSaved reads every job record in the store, by job id.
func loadSaved(st *store.Store) (map[string]*saved, error) {
	out := map[string]*saved{}
	err := st.Scan([]byte(jobsPrefix), func(k, v []byte) error {
		id, part, ok := strings.Cut(string(k[len(jobsPrefix):]), "/")
		if !ok {
			return fmt.Errorf("job record key %q has no part", k)
		}
		sv := out[id]
		if sv == nil {
			sv = &saved{}
			out[id] = sv
		}
		if ok, err := sv.ckpts.add(part, v); ok {
			if err != nil {
				return fmt.Errorf("job %q record %q: %w", id, part, err)
			}
			return nil
		}
		var err error
		switch {
		case part == "h":
			sv.hasInfo = true
			err = proto.Unmarshal(v, &sv.info)
		case part == "p":
			err = proto.Unmarshal(v, &sv.pipeline)
		case part == "d":
			sv.dir = string(v)
		case part == "m":
			err = proto.Unmarshal(v, &sv.metrics)
		case strings.HasPrefix(part, "l/"):
			ev := &jobpb.JobMessagesResponse{}
			err = proto.Unmarshal(v, ev)
			sv.events = append(sv.events, ev) // key order is log order
		default:
			err = fmt.Errorf("unknown part %q", part)
		}
		if err != nil {
			return fmt.Errorf("job %q record %q: %w", id, part, err)
		}
		return nil
	})
	return out, err
}

// restore loads the saved jobs so GetJobs, GetState, GetJobMetrics and the
// message streams answer for them. A job that was still live when the
// previous server died ends FAILED, with a message saying why.
func (s *Service) restore() {
	all, err := loadSaved(s.opts.Store)
	if err != nil {
		s.log.Error("reading saved jobs; jobs not read are not listed", "state_dir", s.opts.Store.Dir(), "error", err)
	}
	ids := make([]string, 0, len(all))
	for id, sv := range all {
		if sv.hasInfo && sv.info.GetJobId() == id {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	var resume []*record
	for _, id := range ids {
		r, again := s.restoreRecord(all[id])
		s.mu.jobs[id] = r
		if again {
			resume = append(resume, r)
		}
	}
	for _, id := range endedInOrder(s.mu.jobs) {
		s.ended(id)
	}
	if len(ids) > 0 {
		s.log.Info("restored saved jobs", "count", len(ids), "resuming", len(resume), "state_dir", s.opts.Store.Dir())
	}
	for _, r := range resume {
		s.resume(r)
	}
}

// restoreRecord rebuilds a saved job's record, and reports whether the
// job was live when the previous server died and can go on.
func (s *Service) restoreRecord(sv *saved) (*record, bool) {
	j := &Job{ID: sv.info.GetJobId(), Name: sv.info.GetJobName(), Options: sv.info.GetPipelineOptions(),
		Pipeline: &sv.pipeline, ArtifactDir: sv.dir}
	r := &record{job: j, cancel: func() {}, done: make(chan struct{})}
	r.mu.changed = make(chan struct{})
	r.mu.state = jobpb.JobState_STOPPED
	r.mu.log = sv.events
	for _, ev := range sv.events {
		if st := ev.GetStateResponse(); st != nil {
			r.mu.state = st.GetState()
		}
		if m := ev.GetMessageResponse(); m != nil {
			r.mu.nextMsg++
			if m.GetImportance() < jobpb.JobMessage_JOB_MESSAGE_WARNING {
				r.mu.minor++
			}
		}
	}
	r.mu.metrics = sv.metrics.GetAttempted()
	ckpt, n := sv.ckpts.resume()
	r.journal = &journal{st: s.opts.Store, id: j.ID, log: s.log, ckpt: n}
	j.sink = r
	if isTerminal(r.mu.state) {
		close(r.done)
		return r, false
	}
	// The job's workers and engine died with the previous server.
	why := s.cannotResume(j)
	if why == "" && ckpt == nil {
		ckpt, why = s.savepointCheckpoint(j)
	}
	if why == "" {
		j.Resume = ckpt
		j.Retrieval = artifacts.NewRetrieval(j.Pipeline, j.ArtifactDir)
		return r, true
	}
	s.cleanup(j.ID, j.ArtifactDir)
	final := r.finish(interruptedError(j, r.mu.state, why), false)
	s.log.Info("job interrupted by a server restart", "job_id", j.ID, "state", final.String())
	return r, false
}

// cannotResume says why a job live when the server died cannot go on
// after the restart; "" if it can.
func (s *Service) cannotResume(j *Job) string {
	if isLoopback(j) {
		return "its SDK workers ran inside the program that submitted it (LOOPBACK environment), which a restarted server cannot reach"
	}
	res, ok := s.opts.Executor.(Resumer)
	if !ok {
		return "this executor cannot resume jobs"
	}
	if err := res.Resumable(j); err != nil {
		return err.Error()
	}
	return ""
}

// resume runs a job again after a restart: from its last checkpoint if
// it has one, else from the beginning.
func (s *Service) resume(r *record) {
	j := r.job
	from := "from its last checkpoint"
	if j.Resume == nil {
		from = "from the beginning: it had no checkpoint yet"
	}
	s.log.Info("resuming job after a server restart", "job_id", j.ID, "from", from)
	r.message(jobpb.JobMessage_JOB_MESSAGE_WARNING, fmt.Sprintf("the beam-runner server restarted; job %s resumes %s", j.ID, from))
	j.Stats()
	ctx, cancel := context.WithCancel(s.baseCtx)
	r.cancel = cancel
	s.mu.Lock()
	s.mu.running++
	s.updateIdleLocked()
	s.mu.Unlock()
	s.wg.Add(1)
	go s.runJob(ctx, r)
}

// interruptedError explains why a job that was live when the server died
// cannot go on.
func interruptedError(j *Job, was jobpb.JobState_Enum, why string) error {
	return fmt.Errorf("job %s was %v when the beam-runner server stopped; after the restart it cannot continue: %s. Submit it again", j.ID, was, why)
}

// isLoopback reports whether the job asked for LOOPBACK workers.
func isLoopback(j *Job) bool { return LoopbackOptions(j.Options) }
