// Package lifecycle checks how the job server handles a job's whole life
// through its real gRPC API: rejection at Prepare, failure, cancellation,
// concurrent jobs and environments that never start. Pipelines are built
// in-process with the Beam Go SDK and run on a LOOPBACK worker pool served
// by this process, so a check can observe the DoFns and the pool directly.
package lifecycle

import (
	"context"
	"fmt"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Env describes the job server under test.
type Env struct {
	Endpoint  string
	ServerPID int
	// WorkerStartTimeout is the server's --worker_start_timeout; 0 means its
	// default of two minutes.
	WorkerStartTimeout time.Duration
	// Work is a scratch directory for scripts and files the checks need.
	Work string
}

// Check is one named lifecycle check; Run returns nil when it passes.
type Check struct {
	Name string
	Run  func(ctx context.Context, s *Session) error
}

// Checks lists every check in the order they should run.
func Checks() []Check {
	return []Check{
		{"unsupported_urn", checkUnsupportedURN},
		{"dofn_error", checkDoFnError},
		{"cancel", checkCancel},
		{"two_jobs", checkTwoJobs},
		{"process_never_connects", checkProcessNeverConnects},
		{"process_missing_command", checkProcessMissingCommand},
	}
}

// Session is what the checks share: a job service client and the LOOPBACK
// worker pool their pipelines name.
type Session struct {
	Env
	conn   *grpc.ClientConn
	client jobpb.JobServiceClient
	pool   *pool
}

// Open connects to the server and starts the worker pool.
func Open(ctx context.Context, env Env) (*Session, error) {
	if env.WorkerStartTimeout == 0 {
		env.WorkerStartTimeout = 2 * time.Minute
	}
	conn, err := grpc.NewClient(env.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	p, err := startPool(ctx)
	if err != nil {
		conn.Close()
		return nil, err
	}
	return &Session{Env: env, conn: conn, client: jobpb.NewJobServiceClient(conn), pool: p}, nil
}

// Close stops the worker pool and the connection.
func (s *Session) Close() {
	s.pool.stop()
	s.conn.Close()
}

// within runs f with a deadline and names the step when it runs out.
func within(ctx context.Context, limit time.Duration, step string, f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	if err := f(ctx); err != nil {
		return fmt.Errorf("%s: %w", step, err)
	}
	return nil
}
