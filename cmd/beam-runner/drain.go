package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// drainCommand implements `beam-runner drain [--endpoint=host:port] JOB_ID`:
// it asks a running job server to drain the job, as an operator would, and
// prints the job's state. It returns the process exit code.
func drainCommand(args []string, out io.Writer) int {
	fs := flag.NewFlagSet("drain", flag.ContinueOnError)
	fs.SetOutput(out)
	endpoint := fs.String("endpoint", "localhost:8073", "job service endpoint")
	timeout := fs.Duration("timeout", 30*time.Second, "time limit for the request")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(out, "usage: beam-runner drain [--endpoint=host:port] JOB_ID")
		return 2
	}
	conn, err := grpc.NewClient(*endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fmt.Fprintln(out, "beam-runner drain:", err)
		return 1
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	resp, err := jobpb.NewJobServiceClient(conn).Drain(ctx, &jobpb.DrainJobRequest{JobId: fs.Arg(0)})
	if err != nil {
		fmt.Fprintf(out, "beam-runner drain: job %s at %s: %v\n", fs.Arg(0), *endpoint, err)
		return 1
	}
	fmt.Fprintf(out, "job %s: %v\n", fs.Arg(0), resp.GetState())
	return 0
}
