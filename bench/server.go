package bench

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Server is a job server process (beam-runner or Prism) started for one run,
// so its peak RSS (VmHWM) belongs to that run alone.
type Server struct {
	Endpoint string
	cmd      *exec.Cmd
	exited   chan struct{} // closed when the process ends
	waitErr  error
}

// StartServer starts bin on a free port and returns once it answers the Job
// API. Both servers take Prism's flags, so one launcher serves both; extra
// flags are for the one server that knows them.
func StartServer(ctx context.Context, bin, logPath string, extra ...string) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, append([]string{"--job_port=" + strconv.Itoa(port), "--log_level=warn"}, extra...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	s := &Server{Endpoint: "localhost:" + strconv.Itoa(port), cmd: cmd, exited: make(chan struct{})}
	go func() { s.waitErr = cmd.Wait(); logf.Close(); close(s.exited) }()
	if err := s.waitReady(ctx, 30*time.Second); err != nil {
		s.Stop()
		return nil, fmt.Errorf("%s: %w (log: %s)", bin, err, logPath)
	}
	return s, nil
}

// freePort asks the kernel for an unused port. Fixed ports are unsafe here:
// other servers on the machine may hold them, and then the clients would
// silently measure someone else's server.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "localhost:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitReady polls GetJobs until it succeeds, failing early if our process
// died (e.g. the port was taken between freePort and bind).
func (s *Server) waitReady(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			return fmt.Errorf("server exited before it was ready: %v", s.waitErr)
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		if s.ping(ctx) == nil {
			select {
			case <-s.exited:
				return fmt.Errorf("server exited; another process answers on %s", s.Endpoint)
			default:
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("no Job API answer on %s after %v", s.Endpoint, limit)
}

func (s *Server) ping(ctx context.Context) error {
	return s.withClient(ctx, func(ctx context.Context, c jobpb.JobServiceClient) error {
		_, err := c.GetJobs(ctx, &jobpb.GetJobsRequest{})
		return err
	})
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
	kb, _ := ReadVmHWM(s.cmd.Process.Pid)
	return kb
}

// Stop asks the server to exit, then kills it if it lingers, so a hung
// server cannot stall the benchmark.
func (s *Server) Stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}
