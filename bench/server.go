package bench

import (
	"context"
	"fmt"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/beam-runner/beam-runner/internal/procfs"
	"github.com/beam-runner/beam-runner/testsupport/serverproc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Server is a job server process (beam-runner or Prism) started for one run,
// so its peak RSS (VmHWM) belongs to that run alone.
type Server struct {
	Endpoint string
	proc     *serverproc.Proc
}

// StartServer starts bin on a free port and returns once it answers the Job
// API. Both servers take Prism's flags, so one launcher serves both; extra
// flags are for the one server that knows them.
func StartServer(ctx context.Context, bin, logPath string, extra ...string) (*Server, error) {
	p, err := serverproc.Start(ctx, serverproc.Spec{
		Bin: bin, Args: append([]string{"--log_level=warn"}, extra...), PortFlag: "--job_port",
		LogPath: logPath, ReadyLimit: 30 * time.Second,
	})
	if err != nil {
		return nil, fmt.Errorf("%w (log: %s)", err, logPath)
	}
	return &Server{Endpoint: p.Addr, proc: p}, nil
}

// withClient dials the job service for one short call.
func (s *Server) withClient(ctx context.Context, f func(context.Context, jobpb.JobServiceClient) error) error {
	conn, err := grpc.NewClient(s.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return f(ctx, jobpb.NewJobServiceClient(conn))
}

// PeakRSSKB reads the process's high-water RSS. It must be read before Stop:
// /proc/<pid> goes away with the process.
func (s *Server) PeakRSSKB() int64 {
	kb, _ := procfs.ReadVmHWM(s.proc.Pid())
	return kb
}

// Stop asks the server to exit, then kills it if it lingers, so a hung
// server cannot stall the benchmark.
func (s *Server) Stop() { s.proc.Stop() }
