package serverproc

import (
	"context"
	"errors"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/beam-runner/beam-runner/testsupport/testwait"
)

// The test binary doubles as the server: with childEnv set it runs the
// behaviour named there instead of the tests.
const childEnv = "SERVERPROC_TEST_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		runChild(mode)
		return
	}
	os.Exit(m.Run())
}

func runChild(mode string) {
	if mode == "exit" {
		os.Exit(3)
	}
	if mode == "ignore-term" {
		signal.Ignore(syscall.SIGTERM)
	}
	port := strings.TrimPrefix(os.Args[len(os.Args)-1], "--port=")
	l, err := net.Listen("tcp", "localhost:"+port)
	if err != nil {
		os.Exit(4)
	}
	for {
		c, err := l.Accept()
		if err != nil {
			os.Exit(5)
		}
		c.Close()
	}
}

func spec(t *testing.T, mode string) Spec {
	t.Setenv(childEnv, mode)
	return Spec{
		Bin: os.Args[0], PortFlag: "--port", Ready: Listening,
		LogPath: filepath.Join(t.TempDir(), "server.log"), ReadyLimit: 30 * time.Second,
	}
}

func TestStartWaitsUntilListeningAndStopEndsIt(t *testing.T) {
	p, err := Start(context.Background(), spec(t, "serve"))
	if err != nil {
		t.Fatal(err)
	}
	if err := Listening(context.Background(), p.Addr); err != nil {
		t.Fatalf("Start returned before %s listened: %v", p.Addr, err)
	}
	p.Stop()
	select {
	case <-p.Exited():
	default:
		t.Fatal("Stop returned while the process still runs")
	}
	p.Stop() // a second Stop is harmless
}

func TestStartFailsWhenTheServerExits(t *testing.T) {
	start := time.Now()
	_, err := Start(context.Background(), spec(t, "exit"))
	if err == nil || !strings.Contains(err.Error(), "exited before it was ready") || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("got %v, want an error saying the server exited with status 3", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("took %v to see the exit; the readiness limit is 30s", d)
	}
}

func TestStartGivesUpAfterTheLimit(t *testing.T) {
	s := spec(t, "serve")
	s.ReadyLimit = 500 * time.Millisecond
	s.Ready = func(context.Context, string) error { return errors.New("not yet") }
	_, err := Start(context.Background(), s)
	if err == nil || !strings.Contains(err.Error(), "not ready") || !strings.Contains(err.Error(), "not yet") {
		t.Fatalf("got %v, want a not-ready error with the last probe's cause", err)
	}
}

func TestStartEndsWithItsContext(t *testing.T) {
	s := spec(t, "serve")
	s.Ready = func(context.Context, string) error { return errors.New("not yet") }
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := Start(ctx, s); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want the context's deadline", err)
	}
}

func TestStopKillsAServerThatIgnoresSIGTERM(t *testing.T) {
	s := spec(t, "ignore-term")
	s.Grace = 300 * time.Millisecond
	p, err := Start(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { p.Stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Stop did not end a server that ignores SIGTERM", "\n"+testwait.Goroutines())
	}
	if err := p.ExitErr(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("exit: %v, want killed", err)
	}
}
