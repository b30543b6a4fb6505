package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// server is a running job server whose output goes to logPath.
type server struct {
	endpoint string
	logPath  string
	cmd      *exec.Cmd
	exited   chan struct{} // closed when the process has exited
	waitErr  error
	stopOnce sync.Once
}

// startServer runs bin on a free port and returns once it answers gRPC.
func startServer(ctx context.Context, bin, logPath, extraArgs string) (*server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	args := append([]string{"--job_port=" + strconv.Itoa(port)}, strings.Fields(extraArgs)...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	setProcAttrs(cmd)
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start job server: %w", err)
	}
	s := &server{endpoint: "localhost:" + strconv.Itoa(port), logPath: logPath, cmd: cmd, exited: make(chan struct{})}
	go func() {
		s.waitErr = cmd.Wait()
		logf.Close()
		close(s.exited)
	}()
	if err := s.waitReady(ctx, time.Minute); err != nil {
		s.stop()
		return nil, fmt.Errorf("%w\n--- %s ---\n%s", err, logPath, s.tail(40))
	}
	return s, nil
}

// freePort asks the kernel for an unused port. Another process could take it
// before the server binds; the readiness check then fails loudly.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "localhost:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitReady polls the job service with a cheap RPC until it answers: an open
// TCP port alone does not mean the gRPC services are registered.
func (s *server) waitReady(ctx context.Context, limit time.Duration) error {
	conn, err := grpc.NewClient(s.endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	client := jobpb.NewJobServiceClient(conn)
	deadline := time.Now().Add(limit)
	for {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err = client.GetJobs(rctx, &jobpb.GetJobsRequest{})
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("job server exited before serving: %v", s.waitErr)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("job server at %s not answering gRPC after %s: %v", s.endpoint, limit, err)
		}
	}
}

// stop asks the server to exit (SIGTERM), then kills it after a grace period.
// Safe to call more than once.
func (s *server) stop() {
	s.stopOnce.Do(func() {
		terminate(s.cmd)
		select {
		case <-s.exited:
		case <-time.After(10 * time.Second):
			killGroup(s.cmd)
			<-s.exited
		}
	})
}

// exitedEarly reports an error if the server exited before stop was called.
func (s *server) exitedEarly() error {
	select {
	case <-s.exited:
		return fmt.Errorf("job server exited during the run: %v", s.waitErr)
	default:
		return nil
	}
}

// cancelOnExit returns a context cancelled when the server process exits.
func (s *server) cancelOnExit(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-s.exited:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// tail returns the last n lines of the server log.
func (s *server) tail(n int) string { return tailFile(s.logPath, n) }

// tailFile returns the last n lines of a file.
func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return joinLines(lines)
}

func joinLines(lines []string) string { return strings.Join(lines, "\n") }
