package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"github.com/beam-runner/beam-runner/testsupport/gopipe"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/metricsx"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal/runnerlib"

	"github.com/beam-runner/beam-runner/internal/textclip"
	"github.com/beam-runner/beam-runner/testsupport/testwait"
)

// marshal builds a pipeline proto whose Go environment is envURN with the
// given config (the pool address for LOOPBACK, JSON for PROCESS).
func marshal(ctx context.Context, build func(beam.Scope), envURN, envConfig string) (*pipepb.Pipeline, error) {
	p, s := beam.NewPipelineWithRoot()
	build(s)
	return gopipe.Marshal(ctx, p, envURN, envConfig)
}

// loopback builds a pipeline that runs on the session's worker pool.
func (s *Session) loopback(ctx context.Context, build func(beam.Scope)) (*pipepb.Pipeline, error) {
	return marshal(ctx, build, graphx.URNEnvExternal, s.pool.addr())
}

// submit prepares, stages and runs p as the Go SDK's universal runner does,
// and returns the job id.
func (s *Session) submit(ctx context.Context, name string, p *pipepb.Pipeline) (string, error) {
	// The worker artifact is never run (LOOPBACK or a custom process), but
	// the SDK stages one, so an empty file stands in for it.
	bin := filepath.Join(s.Work, "empty-worker")
	if err := os.WriteFile(bin, nil, 0o644); err != nil {
		return "", err
	}
	if err := runnerlib.UpdateGoEnvironmentWorker(bin, p); err != nil {
		return "", err
	}
	prepID, artifacts, token, err := runnerlib.Prepare(ctx, s.client, p, &runnerlib.JobOptions{Name: name, Loopback: true})
	if err != nil {
		return "", err
	}
	retrieval, err := runnerlib.Stage(ctx, prepID, artifacts, bin, token)
	if err != nil {
		return "", err
	}
	return runnerlib.Submit(ctx, s.client, prepID, retrieval)
}

// outcome is what a job's message stream said by the time it ended.
type outcome struct {
	state    jobpb.JobState_Enum
	messages []string
	elapsed  time.Duration // from the call to follow until the stream ended
}

func (o outcome) text() string { return strings.Join(o.messages, "\n") }

// follow reads the job's message stream until the server ends it after the
// terminal state.
func (s *Session) follow(ctx context.Context, jobID string) (outcome, error) {
	start := time.Now()
	var o outcome
	stream, err := s.client.GetMessageStream(ctx, &jobpb.JobMessagesRequest{JobId: jobID})
	if err != nil {
		return o, err
	}
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			o.elapsed = time.Since(start)
			return o, nil
		}
		if err != nil {
			return o, fmt.Errorf("message stream (last state %v): %w", o.state, err)
		}
		if st := msg.GetStateResponse(); st != nil {
			o.state = st.GetState()
		}
		if m := msg.GetMessageResponse(); m != nil {
			o.messages = append(o.messages, m.GetMessageText())
		}
	}
}

// runJob submits p and follows it to its end.
func (s *Session) runJob(ctx context.Context, name string, p *pipepb.Pipeline) (string, outcome, error) {
	id, err := s.submit(ctx, name, p)
	if err != nil {
		return "", outcome{}, fmt.Errorf("submit: %w", err)
	}
	o, err := s.follow(ctx, id)
	return id, o, err
}

// expectState fails unless o ended in want, quoting the job's messages.
func expectState(o outcome, want jobpb.JobState_Enum) error {
	if o.state != want {
		return fmt.Errorf("job ended %v, want %v; messages:\n%s", o.state, want, textclip.Clip(o.text(), 2000))
	}
	return nil
}

// awaitState polls GetState until the job is in want, failing early if it
// reaches another terminal state, or after limit.
func (s *Session) awaitState(ctx context.Context, jobID string, want jobpb.JobState_Enum, limit time.Duration) error {
	var got jobpb.JobState_Enum
	err := testwait.For(ctx, limit, func() (bool, error) {
		ev, err := s.client.GetState(ctx, &jobpb.GetJobStateRequest{JobId: jobID})
		if err != nil {
			return false, err
		}
		if got = ev.GetState(); got != want && terminal(got) {
			return false, fmt.Errorf("job reached %v while waiting for %v", got, want)
		}
		return got == want, nil
	})
	if errors.Is(err, testwait.ErrExpired) {
		return fmt.Errorf("job still %v, want %v: %w", got, want, err)
	}
	return err
}

func terminal(s jobpb.JobState_Enum) bool {
	switch s {
	case jobpb.JobState_DONE, jobpb.JobState_FAILED, jobpb.JobState_CANCELLED,
		jobpb.JobState_UPDATED, jobpb.JobState_DRAINED:
		return true
	}
	return false
}

// counter returns the value of the user counter name in the job's metrics.
func (s *Session) counter(ctx context.Context, jobID string, p *pipepb.Pipeline, name string) (int64, error) {
	resp, err := s.client.GetJobMetrics(ctx, &jobpb.GetJobMetricsRequest{JobId: jobID})
	if err != nil {
		return 0, err
	}
	m := resp.GetMetrics()
	res := metricsx.FromMonitoringInfos(p, m.GetAttempted(), m.GetCommitted())
	var total int64
	found := false
	for _, c := range res.AllMetrics().Counters() {
		if c.Name() == name {
			total += c.Result()
			found = true
		}
	}
	if !found {
		return 0, fmt.Errorf("no counter %q in the job's metrics", name)
	}
	return total, nil
}
