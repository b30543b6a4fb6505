package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// drainAfter is how long a drain-test job runs before the operator drains
// it: long enough for its sources to be mid-read.
const drainAfter = 3 * time.Second

// drainPrefix names the jobs of Beam's TestDrain (the integration package
// names jobs go-<lowercased test name>-<n>), which only end when drained.
const drainPrefix = "go-testdrain-"

// operateDrains plays the operator for TestDrain: it drains each such job
// through the Job API's Drain RPC a few seconds after it starts running,
// until ctx ends.
func operateDrains(ctx context.Context, endpoint string, logf func(string, ...any)) {
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		logf("drainer: %v", err)
		return
	}
	defer conn.Close()
	client := jobpb.NewJobServiceClient(conn)
	runningSince := map[string]time.Time{}
	drained := map[string]bool{}
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for _, id := range drainable(ctx, client, runningSince) {
			if drained[id] {
				continue
			}
			drained[id] = true
			resp, err := client.Drain(ctx, &jobpb.DrainJobRequest{JobId: id})
			logf("drainer: drained %s: state %v err %v", id, resp.GetState(), err)
		}
	}
}

// drainable lists drain-test jobs that have been running for drainAfter.
func drainable(ctx context.Context, client jobpb.JobServiceClient, since map[string]time.Time) []string {
	jobs, err := client.GetJobs(ctx, &jobpb.GetJobsRequest{})
	if err != nil {
		return nil
	}
	var out []string
	for _, j := range jobs.GetJobInfo() {
		if !strings.HasPrefix(j.GetJobName(), drainPrefix) || j.GetState() != jobpb.JobState_RUNNING {
			continue
		}
		if _, ok := since[j.GetJobId()]; !ok {
			since[j.GetJobId()] = time.Now()
		}
		if time.Since(since[j.GetJobId()]) >= drainAfter {
			out = append(out, j.GetJobId())
		}
	}
	return out
}

func logStderr(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "validates: "+format+"\n", args...)
}
