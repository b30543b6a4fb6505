package jobs

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// record is the service's bookkeeping for one job: its state, the ordered
// log of state changes and messages that streams replay, and its metrics.
// It implements eventSink for the Job it belongs to.
type record struct {
	job     *Job
	cancel  context.CancelFunc
	done    chan struct{} // closed after the terminal event is logged
	journal *journal      // where the record outlives the server; nil: nowhere

	mu struct {
		sync.Mutex
		state   state
		log     []*jobpb.JobMessagesResponse // states and messages, in order
		changed chan struct{}                // closed and replaced on append
		nextMsg int
		minor   int // messages below WARNING kept so far
		metrics []*pipepb.MonitoringInfo
	}
}

// maxMinorMessages bounds the messages below WARNING a job keeps for late
// subscribers, so a chatty job cannot exhaust the server's memory. States,
// warnings and errors are always kept.
const maxMinorMessages = 10000

func newRecord(j *Job, cancel context.CancelFunc) *record {
	r := &record{job: j, cancel: cancel, done: make(chan struct{})}
	r.mu.changed = make(chan struct{})
	r.mu.state = jobpb.JobState_STOPPED
	r.appendLocked(stateEvent(jobpb.JobState_STOPPED)) // no journal yet: nothing to wait for
	j.sink = r
	j.Stats() // created now, before Execute can race to create it
	return r
}

func stateEvent(s state) *jobpb.JobMessagesResponse {
	return &jobpb.JobMessagesResponse{Response: &jobpb.JobMessagesResponse_StateResponse{
		StateResponse: &jobpb.JobStateEvent{State: s, Timestamp: timestamppb.Now()},
	}}
}

// appendLocked logs an event, queues its write if the record is durable,
// and wakes every subscriber. The returned channel is closed once the
// event is saved, if it is a state (nil: nothing to wait for); wait for it
// only after releasing r.mu.
func (r *record) appendLocked(ev *jobpb.JobMessagesResponse) (saved <-chan struct{}) {
	r.mu.log = append(r.mu.log, ev)
	if r.journal != nil {
		saved = r.journal.event(len(r.mu.log)-1, ev, r.mu.metrics)
	}
	close(r.mu.changed)
	r.mu.changed = make(chan struct{})
	return saved
}

// setState moves the job to s if policy allows it, and reports whether it
// did. It returns once the change is synced to disk, if it is saved.
func (r *record) setState(s state) bool {
	r.mu.Lock()
	ok, saved := r.setStateLocked(s)
	r.mu.Unlock()
	wait(saved)
	return ok
}

func (r *record) setStateLocked(s state) (bool, <-chan struct{}) {
	if !canTransition(r.mu.state, s) {
		return false, nil
	}
	r.mu.state = s
	saved := r.appendLocked(stateEvent(s))
	if isTerminal(s) {
		close(r.done)
	}
	return true, saved
}

// finish logs the job's end. On failure the error message is logged before
// the FAILED state: Beam's Go client (runnerlib.WaitForCompletion) reports
// the most recent error it saw when FAILED arrives.
// It returns once the end is synced to disk, if it is saved, and with it
// every event before.
func (r *record) finish(execErr error, ctxCancelled bool) state {
	r.mu.Lock()
	final := finalState(r.mu.state, execErr, ctxCancelled)
	if final == jobpb.JobState_FAILED {
		r.messageLocked(jobpb.JobMessage_JOB_MESSAGE_ERROR, execErr.Error())
	}
	_, saved := r.setStateLocked(final)
	r.mu.Unlock()
	wait(saved)
	return final
}

func (r *record) state() state {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mu.state
}

func (r *record) stateEvent() *jobpb.JobStateEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.mu.log) - 1; i >= 0; i-- {
		if ev := r.mu.log[i].GetStateResponse(); ev != nil {
			return ev
		}
	}
	return &jobpb.JobStateEvent{State: r.mu.state}
}

// since returns the events from index i on, a channel closed when more
// arrive, and whether the log is complete (the terminal state is logged).
func (r *record) since(i int) ([]*jobpb.JobMessagesResponse, <-chan struct{}, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mu.log[i:], r.mu.changed, isTerminal(r.mu.state)
}

// message implements eventSink. Messages after the job ended are dropped:
// streams have already ended and must not be reopened.
func (r *record) message(importance jobpb.JobMessage_MessageImportance, text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if isTerminal(r.mu.state) {
		return
	}
	if importance < jobpb.JobMessage_JOB_MESSAGE_WARNING {
		r.mu.minor++
		switch {
		case r.mu.minor == maxMinorMessages+1:
			importance, text = jobpb.JobMessage_JOB_MESSAGE_WARNING,
				fmt.Sprintf("job %s sent more than %d messages below WARNING; further ones are dropped", r.job.ID, maxMinorMessages)
		case r.mu.minor > maxMinorMessages:
			return
		}
	}
	r.messageLocked(importance, text)
}

func (r *record) messageLocked(importance jobpb.JobMessage_MessageImportance, text string) {
	r.mu.nextMsg++
	r.appendLocked(&jobpb.JobMessagesResponse{Response: &jobpb.JobMessagesResponse_MessageResponse{
		MessageResponse: &jobpb.JobMessage{
			MessageId:   strconv.Itoa(r.mu.nextMsg),
			Time:        time.Now().UTC().Format(time.RFC3339Nano),
			Importance:  importance,
			MessageText: text,
		},
	}})
}

// running implements eventSink.
func (r *record) running() { r.setState(jobpb.JobState_RUNNING) }

// metrics implements eventSink.
func (r *record) metrics(infos []*pipepb.MonitoringInfo) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mu.metrics = infos
}

func (r *record) currentMetrics() []*pipepb.MonitoringInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mu.metrics
}

// follow sends every event from the start of the log, then each new one as
// it happens, and returns nil once the terminal state has been sent.
func (r *record) follow(ctx context.Context, send func(*jobpb.JobMessagesResponse) error) error {
	next := 0
	for {
		evs, changed, complete := r.since(next)
		for _, ev := range evs {
			if err := send(ev); err != nil {
				return err
			}
		}
		next += len(evs)
		if complete {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// checkpoint implements eventSink: it saves data if the record is
// durable and the job has not ended (a finished job's checkpoint is gone
// for good), and reports whether it did. The write is queued under r.mu,
// so it comes before the terminal state's (which deletes it) or not at
// all, and waited for after: job messages and metrics do not wait behind
// a checkpoint's fsyncs.
func (r *record) checkpoint(data []byte) (bool, error) {
	if r.journal == nil {
		return false, nil
	}
	r.mu.Lock()
	if isTerminal(r.mu.state) {
		r.mu.Unlock()
		return false, nil
	}
	res := r.journal.queueCheckpoint(data)
	r.mu.Unlock()
	return true, <-res
}
