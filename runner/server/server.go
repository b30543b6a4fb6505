// Package server hosts the job service and artifact staging service on one
// gRPC server, with bounded shutdown and optional idle shutdown.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/beam-runner/beam-runner/runner/jobs"
	"github.com/beam-runner/beam-runner/runner/store"
	"github.com/beam-runner/beam-runner/runner/web"
	"google.golang.org/grpc"
)

// Config configures a Server.
type Config struct {
	JobPort      int    // used by ListenAndServe; 0 picks a free port
	Host         string // interface for ListenAndServe; default "localhost"
	ArtifactRoot string // default: a fresh private directory (see artifacts.NewRoot)
	// MaxPreparedBytes caps prepared, not yet run, pipelines (see
	// jobs.Options.MaxPreparedBytes).
	MaxPreparedBytes int64
	// MaxFinishedJobs caps the ended jobs kept (jobs.Options.MaxFinishedJobs).
	MaxFinishedJobs int
	Logger          *slog.Logger
	Executor        jobs.Executor
	// IdleShutdown, when > 0, makes Serve return once no job has been
	// prepared or running for this long.
	IdleShutdown time.Duration
	// WebAddr, when set, is where the web UI, /metrics and (with Pprof)
	// /debug/pprof are served, e.g. "localhost:8074"; port 0 picks one.
	WebAddr string
	// WebAllowedHosts are host names the web endpoint serves besides
	// localhost, 127.0.0.1, ::1 and WebAddr's host (web.Options).
	WebAllowedHosts []string
	Pprof           bool
	// Store keeps job records across restarts; nil keeps them in memory.
	// The caller closes it after Stop.
	Store *store.Store
}

// Server is a running job server.
type Server struct {
	cfg  Config
	log  *slog.Logger
	svc  *jobs.Service
	grpc *grpc.Server
	web  *http.Server

	mu          sync.Mutex
	endpoint    string
	webEndpoint string
	stopOnce    sync.Once
}

// maxMsg lifts gRPC's 4 MiB default: pipelines with large embedded
// payloads (side inputs, xlang artifacts) easily exceed it.
const maxMsg = math.MaxInt32

// New builds a server; call Serve or ListenAndServe to start it.
func New(cfg Config) (*Server, error) {
	if cfg.Executor == nil {
		return nil, errors.New("server: Config.Executor is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Host == "" {
		cfg.Host = "localhost"
	}
	s := &Server{cfg: cfg, log: cfg.Logger}
	s.svc = jobs.NewService(jobs.Options{
		Executor:         cfg.Executor,
		StagingEndpoint:  s.Endpoint,
		ArtifactRoot:     cfg.ArtifactRoot,
		MaxPreparedBytes: cfg.MaxPreparedBytes,
		MaxFinishedJobs:  cfg.MaxFinishedJobs,
		Logger:           cfg.Logger,
		Store:            cfg.Store,
	})
	s.grpc = grpc.NewServer(grpc.MaxRecvMsgSize(maxMsg), grpc.MaxSendMsgSize(maxMsg))
	jobpb.RegisterJobServiceServer(s.grpc, s.svc)
	jobpb.RegisterArtifactStagingServiceServer(s.grpc, s.svc.Staging())
	jobs.RegisterSavepoints(s.grpc, s.svc)
	if cfg.WebAddr != "" {
		s.web = &http.Server{
			Handler: web.Handler(s.svc, web.Options{Pprof: cfg.Pprof, Logger: cfg.Logger,
				Listen: cfg.WebAddr, AllowedHosts: cfg.WebAllowedHosts}),
			ReadHeaderTimeout: 10 * time.Second,
		}
	}
	return s, nil
}

// Endpoint is the address clients use, e.g. "localhost:8073"; empty until
// Serve is called.
func (s *Server) Endpoint() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.endpoint
}

// WebEndpoint is the web UI's address, e.g. "localhost:8074"; empty until
// Serve has started it, or when it is off.
func (s *Server) WebEndpoint() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.webEndpoint
}

// Service is the job service, for in-process readers of job state.
func (s *Server) Service() *jobs.Service { return s.svc }

// serveWeb starts the web endpoint, if configured.
func (s *Server) serveWeb() error {
	if s.web == nil {
		return nil
	}
	lis, err := net.Listen("tcp", s.cfg.WebAddr)
	if err != nil {
		return fmt.Errorf("listening for the web UI (--web_port): %w", err)
	}
	s.mu.Lock()
	s.webEndpoint = lis.Addr().String()
	s.mu.Unlock()
	s.log.Info("serving web UI on http://"+lis.Addr().String(), "web_endpoint", lis.Addr().String())
	go func() {
		if err := s.web.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("web UI server", "error", err)
		}
	}()
	return nil
}

// ListenAndServe listens on Config.Host:JobPort and serves.
func (s *Server) ListenAndServe() error {
	lis, err := net.Listen("tcp", net.JoinHostPort(s.cfg.Host, strconv.Itoa(s.cfg.JobPort)))
	if err != nil {
		return fmt.Errorf("listening for the job service: %w", err)
	}
	return s.Serve(lis)
}

// Serve serves on lis until Stop is called (returns nil), the idle timeout
// passes (returns nil after shutting down), or serving fails.
func (s *Server) Serve(lis net.Listener) error {
	port := lis.Addr().(*net.TCPAddr).Port
	s.mu.Lock()
	s.endpoint = net.JoinHostPort("localhost", strconv.Itoa(port))
	s.mu.Unlock()
	s.log.Info("serving job service on "+s.Endpoint(), "endpoint", s.Endpoint())
	// Prism's readiness line, for tools that scrape Prism's logs.
	s.log.Info("Serving JobManagement", slog.String("endpoint", s.Endpoint()))

	if err := s.serveWeb(); err != nil {
		// The job service matters more than its window: another server
		// (or Prism) may hold the default web port.
		s.log.Warn("web UI not started", "error", err)
	}
	errc := make(chan error, 1)
	go func() { errc <- s.grpc.Serve(lis) }()
	served := make(chan struct{})
	defer close(served)
	idle := s.idleTimeout(served)
	select {
	case err := <-errc:
		if errors.Is(err, grpc.ErrServerStopped) {
			return nil
		}
		return err
	case <-idle:
		s.log.Info("shutting down after being idle", "idle_shutdown_timeout", s.cfg.IdleShutdown)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return s.Stop(ctx)
	}
}

// Stop cancels running jobs, waits for them until ctx expires, and stops
// serving. Safe to call more than once.
func (s *Server) Stop(ctx context.Context) error {
	var err error
	s.stopOnce.Do(func() {
		err = s.svc.Close(ctx)
		stopGRPC(ctx, s.grpc)
		if s.web != nil {
			// Pages poll; nothing is worth waiting for once jobs stopped.
			s.web.Close()
		}
	})
	return err
}

// stopGRPC lets in-flight RPCs (streams reporting the final states) finish,
// but no longer than ctx allows.
func stopGRPC(ctx context.Context, g *grpc.Server) {
	done := make(chan struct{})
	go func() { g.GracefulStop(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		g.Stop()
	}
}

// idleTimeout returns a channel closed once the service has been idle for
// IdleShutdown, or nil (never ready) when idle shutdown is off.
func (s *Server) idleTimeout(served <-chan struct{}) <-chan struct{} {
	if s.cfg.IdleShutdown <= 0 {
		return nil
	}
	ch := make(chan struct{})
	go func() {
		tick := time.NewTicker(min(max(s.cfg.IdleShutdown/4, 10*time.Millisecond), time.Second))
		defer tick.Stop()
		for {
			select {
			case now := <-tick.C:
				if idleFor(s.svc, now) >= s.cfg.IdleShutdown {
					close(ch)
					return
				}
			case <-served:
				return
			}
		}
	}()
	return ch
}

// idleFor is how long the service has been idle at now (0 when busy).
func idleFor(svc *jobs.Service, now time.Time) time.Duration {
	since, ok := svc.IdleSince()
	if !ok {
		return 0
	}
	return now.Sub(since)
}
