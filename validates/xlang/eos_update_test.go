//go:build xlang

package xlang

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/beam-runner/beam-runner/testsupport/jobtest"
	"github.com/beam-runner/beam-runner/testsupport/testwait"
)

// updateJob submits p, a new build of running job old's pipeline, as
// its update in place: the options a Java pipeline would send with
// Dataflow's --update (its job name is already set). Old must end
// CANCELLED at a savepoint and the new job run from that savepoint,
// as its messages say; it returns the new job's id.
func updateJob(t *testing.T, ctx context.Context, srv *crashingServer, old, name string, p *pipepb.Pipeline, opts *structpb.Struct) string {
	t.Helper()
	start := time.Now()
	upd := proto.Clone(opts).(*structpb.Struct)
	upd.Fields["beam:option:update:v1"] = structpb.NewBoolValue(true)
	id := jobtest.SubmitStaged(t, ctx, srv.client(t), p, upd, name)
	if id == old {
		t.Fatalf("the update of job %s kept its id", old)
	}
	waitState(t, ctx, srv.client(t), old, jobpb.JobState_CANCELLED)
	msgs := jobMessages(t, srv.client(t), old)
	m := regexp.MustCompile(`savepoint \d+ written to (\S+)`).FindStringSubmatch(msgs)
	if m == nil {
		t.Fatalf("job %s was cancelled without a savepoint: %s", old, lastChars(msgs, 3000))
	}
	waitRunning(t, ctx, srv.client(t), id)
	waitMessage(t, ctx, srv.client(t), id, fmt.Sprintf("job updated job %s from savepoint %s", old, m[1]))
	t.Logf("job %s updated job %s from savepoint %s in %v", id, old, m[1], time.Since(start).Round(100*time.Millisecond))
	return id
}

// waitState waits until job id is in state want; another end fails.
func waitState(t *testing.T, ctx context.Context, cli jobpb.JobServiceClient, id string, want jobpb.JobState_Enum) {
	t.Helper()
	err := testwait.For(ctx, 2*time.Minute, func() (bool, error) {
		st, err := cli.GetState(ctx, &jobpb.GetJobStateRequest{JobId: id})
		if err != nil {
			return false, err
		}
		switch s := st.GetState(); s {
		case want:
			return true, nil
		case jobpb.JobState_FAILED, jobpb.JobState_CANCELLED, jobpb.JobState_DONE, jobpb.JobState_DRAINED:
			return false, fmt.Errorf("job %s ended %v, not %v: %s", id, s, want, lastChars(jobMessages(t, cli, id), 3000))
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("job %s not %v: %v", id, want, err)
	}
}

// waitMessage reads running job id's message stream until a message
// has want; the stream's end, or the job's, first fails.
func waitMessage(t *testing.T, ctx context.Context, cli jobpb.JobServiceClient, id, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, testwait.Limit(t, 2*time.Minute))
	defer cancel()
	st, err := cli.GetMessageStream(ctx, &jobpb.JobMessagesRequest{JobId: id})
	if err != nil {
		t.Fatalf("job %s messages: %v", id, err)
	}
	var seen []string
	for {
		m, err := st.Recv()
		if err != nil {
			t.Fatalf("job %s: no message %q (%v): %s", id, want, err, lastChars(strings.Join(seen, " | "), 3000))
		}
		if text := m.GetMessageResponse().GetMessageText(); strings.Contains(text, want) {
			return
		} else if text != "" {
			seen = append(seen, text)
		}
		if s := m.GetStateResponse().GetState(); s != jobpb.JobState_UNSPECIFIED && s != jobpb.JobState_RUNNING &&
			s != jobpb.JobState_STARTING && s != jobpb.JobState_STOPPED {
			t.Fatalf("job %s went %v before the message %q: %s", id, s, want, lastChars(strings.Join(seen, " | "), 3000))
		}
	}
}
