package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/beam-runner/beam-runner/testsupport/serverproc"
)

// server is a running job server whose output goes to logPath.
type server struct {
	endpoint string
	logPath  string
	proc     *serverproc.Proc
}

// startServer runs bin on a free port and returns once it answers gRPC.
func startServer(ctx context.Context, bin, logPath, extraArgs string) (*server, error) {
	p, err := serverproc.Start(ctx, serverproc.Spec{
		Bin: bin, Args: strings.Fields(extraArgs), PortFlag: "--job_port",
		LogPath: logPath, Grace: 10 * time.Second,
	})
	if err != nil {
		return nil, fmt.Errorf("job server: %w\n--- %s ---\n%s", err, logPath, tailFile(logPath, 40))
	}
	return &server{endpoint: p.Addr, logPath: logPath, proc: p}, nil
}

// stop asks the server to exit (SIGTERM), then kills it after a grace period.
// Safe to call more than once.
func (s *server) stop() { s.proc.Stop() }

// exitedEarly reports an error if the server exited before stop was called.
func (s *server) exitedEarly() error {
	select {
	case <-s.proc.Exited():
		return fmt.Errorf("job server exited during the run: %v", s.proc.ExitErr())
	default:
		return nil
	}
}

// cancelOnExit returns a context cancelled when the server process exits.
func (s *server) cancelOnExit(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-s.proc.Exited():
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
