package jobs

import (
	"context"
	"slices"
	"testing"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/beam-runner/beam-runner/testsupport/testwait"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func listedJobs(t *testing.T, e *env) []string {
	t.Helper()
	resp, err := e.cli.GetJobs(ctxT(t), &jobpb.GetJobsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, j := range resp.GetJobInfo() {
		ids = append(ids, j.GetJobId())
	}
	slices.Sort(ids)
	return ids
}

// Past MaxFinishedJobs the oldest ended jobs are forgotten, in memory and
// in the store: a restart on the same store lists only the kept ones, and
// a smaller cap on restart drops the oldest of those.
func TestMaxFinishedJobs(t *testing.T) {
	dir, root := t.TempDir(), t.TempDir()
	st := openStore(t, dir)
	exec := &fakeExec{execute: func(ctx context.Context, j *Job) error { j.Running(); return nil }}
	cap2 := func(o *Options) { o.MaxFinishedJobs = 2 }
	e1, stop1 := serveDurable(t, exec, st, root, cap2)
	var ids []string
	for range 3 {
		id := e1.submit(t, pipeline())
		e1.waitState(t, id, jobpb.JobState_DONE)
		ids = append(ids, id)
	}
	want := slices.Sorted(slices.Values(ids[1:]))
	// The cap applies once a job's end is recorded, just after its DONE
	// is published.
	testwait.Until(t, 10*time.Second, "GetJobs to list the newest two", func() bool {
		return slices.Equal(listedJobs(t, e1), want)
	})
	if _, err := e1.cli.GetState(ctxT(t), &jobpb.GetJobStateRequest{JobId: ids[0]}); status.Code(err) != codes.NotFound {
		t.Fatalf("GetState of the forgotten job: %v, want NotFound", err)
	}
	stop1()
	n := 0
	if err := st.Scan(jobKey(ids[0], ""), func(_, _ []byte) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("the forgotten job still has %d keys in the store", n)
	}

	e2, stop2 := serveDurable(t, exec, st, root, cap2)
	if got := listedJobs(t, e2); !slices.Equal(got, want) {
		t.Fatalf("after a restart GetJobs = %v, want %v", got, want)
	}
	stop2()

	e3, stop3 := serveDurable(t, exec, st, root, func(o *Options) { o.MaxFinishedJobs = 1 })
	defer stop3()
	if got := listedJobs(t, e3); !slices.Equal(got, ids[2:]) {
		t.Fatalf("after a restart with a cap of 1, GetJobs = %v, want the newest %v", got, ids[2:])
	}
}
