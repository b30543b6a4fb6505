// Package serverproc runs a server as a child process on a free port: the
// job servers (beam-runner, Prism) that bench and validates drive, and
// Python's SDK worker pool. Start returns only once the server answers, or
// with an error as soon as the process exits, the context ends or the
// readiness limit passes; Stop ends the process and everything it started.
// GroupCommand does the same for other children whose whole process tree
// must end with them.
package serverproc

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Spec says how to start a server and how to know it is ready.
type Spec struct {
	Bin  string
	Args []string
	// PortFlag is the flag that takes the port, e.g. "--job_port"; it is
	// passed after Args as PortFlag=PORT.
	PortFlag string
	LogPath  string // the server's stdout and stderr
	// Ready is polled until it returns nil (default: JobAPI).
	Ready func(ctx context.Context, addr string) error
	// ReadyLimit bounds the wait for Ready (default one minute).
	ReadyLimit time.Duration
	// Grace is how long Stop waits after SIGTERM before SIGKILL (default 5s).
	Grace time.Duration
}

// Proc is a running server.
type Proc struct {
	Addr    string // localhost:PORT
	LogPath string

	cmd      *exec.Cmd
	grace    time.Duration
	exited   chan struct{} // closed once the process has been waited for
	waitErr  error         // set before exited is closed
	stopOnce sync.Once
}

// pollEvery is the pause between readiness probes.
const pollEvery = 200 * time.Millisecond

// Start runs the server on a free port and waits until it is ready.
func Start(ctx context.Context, spec Spec) (*Proc, error) {
	spec = withDefaults(spec)
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(spec.LogPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(spec.Bin, append(spec.Args, spec.PortFlag+"="+strconv.Itoa(port))...)
	cmd.Stdout, cmd.Stderr = logf, logf
	OwnGroup(cmd)
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", spec.Bin, err)
	}
	p := &Proc{Addr: "localhost:" + strconv.Itoa(port), LogPath: spec.LogPath, cmd: cmd, grace: spec.Grace, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		logf.Close()
		close(p.exited)
	}()
	if err := p.waitReady(ctx, spec.Ready, spec.ReadyLimit); err != nil {
		p.Stop()
		return nil, fmt.Errorf("%s: %w", spec.Bin, err)
	}
	return p, nil
}

func withDefaults(s Spec) Spec {
	if s.Ready == nil {
		s.Ready = JobAPI
	}
	if s.ReadyLimit <= 0 {
		s.ReadyLimit = time.Minute
	}
	if s.Grace <= 0 {
		s.Grace = 5 * time.Second
	}
	return s
}

// FreePort asks the kernel for an unused port. A fixed port is unsafe:
// another server on the machine may hold it, and the clients would then
// talk to that one. Another process could still take the port before the
// server binds it; the server then exits, and Start says so.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "localhost:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitReady polls ready until it succeeds, failing early if the process
// exits. A probe that succeeds after our process exited reached another
// process on the same port, which is an error too.
func (p *Proc) waitReady(ctx context.Context, ready func(context.Context, string) error, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		err := ready(ctx, p.Addr)
		select {
		case <-p.exited:
			if err == nil {
				return fmt.Errorf("exited, and another process answers on %s", p.Addr)
			}
			return fmt.Errorf("exited before it was ready: %v", p.waitErr)
		default:
		}
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready on %s after %v: %v", p.Addr, limit, err)
		}
		select {
		case <-p.exited:
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pollEvery):
		}
	}
}

// JobAPI is ready once the Job API answers GetJobs: an open TCP port alone
// does not mean the gRPC services are registered.
func JobAPI(ctx context.Context, addr string) error {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err = jobpb.NewJobServiceClient(conn).GetJobs(ctx, &jobpb.GetJobsRequest{})
	return err
}

// Listening is ready once addr accepts TCP connections, for servers with no
// Job API (Python's worker pool).
func Listening(ctx context.Context, addr string) error {
	d := net.Dialer{Timeout: time.Second}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	return c.Close()
}

// Pid is the server's process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Exited is closed once the process has exited.
func (p *Proc) Exited() <-chan struct{} { return p.exited }

// ExitErr is how the process ended; read it after Exited is closed.
func (p *Proc) ExitErr() error { return p.waitErr }

// Stop sends SIGTERM to the server's process group, then SIGKILL if it has
// not exited within the grace period, and last SIGKILL again for children
// that outlived it (e.g. the SDK workers a pool started). Safe to call more
// than once.
func (p *Proc) Stop() {
	p.stopOnce.Do(func() {
		TermGroup(p.cmd)
		select {
		case <-p.exited:
		case <-time.After(p.grace):
			KillGroup(p.cmd)
			<-p.exited
		}
		KillGroup(p.cmd)
	})
}

// GroupCommand is exec.CommandContext for a child in a process group of its
// own: the context's end kills the child and everything it started.
func GroupCommand(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	OwnGroup(cmd)
	cmd.Cancel = func() error { return KillGroup(cmd) }
	return cmd
}
