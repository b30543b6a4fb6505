// Package fnapi is the gRPC endpoint SDK harnesses of one job connect to:
// control, data, state, logging, provision and artifact retrieval, routed by
// the worker id each harness sends in its metadata. Calls without an id the
// runner issued are refused (auth.go).
package fnapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/beam-runner/beam-runner/dataplane"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"
)

// A worker on a host that vanished (powered off, cut off) sends no FIN:
// pinging idle connections ends its streams within about a half minute,
// so its bundles are retried elsewhere instead of waiting forever.
const (
	keepaliveTime    = 15 * time.Second
	keepaliveTimeout = 10 * time.Second
)

// maxMsg lifts gRPC's 4 MiB default: SDKs send large data frames and
// descriptors.
const maxMsg = 1<<31 - 1

// Config wires a server to its job.
type Config struct {
	// Provision returns the provision info for a worker.
	Provision func(workerID string) (*fnpb.ProvisionInfo, error)
	// Log receives every SDK log entry.
	Log func(workerID string, e *fnpb.LogEntry)
	// Retrieval serves staged artifacts; nil serves none.
	Retrieval jobpb.ArtifactRetrievalServiceServer
	// Listen is where the server listens and what workers are told.
	Listen Listen
	// Logger receives refused connections; nil is slog.Default.
	Logger *slog.Logger
}

// Server hosts the Fn API services for one job.
type Server struct {
	fnpb.UnimplementedBeamFnControlServer
	fnpb.UnimplementedBeamFnDataServer
	fnpb.UnimplementedBeamFnStateServer
	fnpb.UnimplementedBeamFnLoggingServer
	fnpb.UnimplementedProvisionServiceServer

	cfg Config
	gs  *grpc.Server
	lis net.Listener

	mu struct {
		sync.Mutex
		workers     map[string]*Worker
		descriptors map[string]*fnpb.ProcessBundleDescriptor
	}
}

// Start listens where cfg.Listen says (by default a free loopback port)
// and serves calls from the workers registered with AddWorker.
func Start(cfg Config) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	lis, err := cfg.Listen.listen()
	if err != nil {
		return nil, fmt.Errorf("fn api: listen: %w", err)
	}
	s := &Server{cfg: cfg, lis: lis}
	s.mu.workers = map[string]*Worker{}
	s.mu.descriptors = map[string]*fnpb.ProcessBundleDescriptor{}
	s.gs = grpc.NewServer(grpc.MaxRecvMsgSize(maxMsg), grpc.MaxSendMsgSize(maxMsg),
		grpc.UnaryInterceptor(s.unaryAuth), grpc.StreamInterceptor(s.streamAuth),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: keepaliveTime, Timeout: keepaliveTimeout}))
	fnpb.RegisterBeamFnControlServer(s.gs, s)
	fnpb.RegisterBeamFnDataServer(s.gs, s)
	fnpb.RegisterBeamFnStateServer(s.gs, s)
	fnpb.RegisterBeamFnLoggingServer(s.gs, s)
	fnpb.RegisterProvisionServiceServer(s.gs, s)
	if cfg.Retrieval != nil {
		jobpb.RegisterArtifactRetrievalServiceServer(s.gs, cfg.Retrieval)
	}
	go s.gs.Serve(lis)
	return s, nil
}

// Endpoint is the host:port harnesses dial: the advertised host and the
// port listened on.
func (s *Server) Endpoint() string {
	port := s.lis.Addr().(*net.TCPAddr).Port
	return net.JoinHostPort(s.cfg.Listen.advertise(), strconv.Itoa(port))
}

// Stop tells every worker to stop and closes the listener at once; the
// streams harnesses still hold end in the background. Harnesses told to
// stop close their streams themselves, so they log no broken-stream
// errors, and Stop forces the rest closed after a moment (streamGrace).
// It does not wait for that: Java's thread-based LOOPBACK workers end
// their control stream only and keep data, state and logging open, and
// waiting for them held every Java job's end back by the whole grace.
func (s *Server) Stop() {
	s.mu.Lock()
	for _, w := range s.mu.workers {
		w.fail(fmt.Errorf("fn api server stopped"))
	}
	s.mu.Unlock()
	s.lis.Close() // the port is free for the next job now (--fn_api_ports)
	go s.closeStreams()
}

// streamGrace is how long harnesses that were told to stop have to close
// their streams before the server ends them.
const streamGrace = 2 * time.Second

func (s *Server) closeStreams() {
	done := make(chan struct{})
	go func() { s.gs.GracefulStop(); close(done) }()
	select {
	case <-done:
	case <-time.After(streamGrace):
		s.gs.Stop()
	}
}

// AddWorker registers a worker id that a harness will connect as.
func (s *Server) AddWorker(id string) *Worker {
	w := newWorker(id)
	s.mu.Lock()
	s.mu.workers[id] = w
	s.mu.Unlock()
	return w
}

// AddDescriptor makes a descriptor available to GetProcessBundleDescriptor.
func (s *Server) AddDescriptor(d *fnpb.ProcessBundleDescriptor) {
	s.mu.Lock()
	s.mu.descriptors[d.GetId()] = d
	s.mu.Unlock()
}

// worker is the registered worker a call comes from; the interceptors
// (auth.go) have refused calls from any other.
func (s *Server) worker(ctx context.Context) (*Worker, error) {
	id := workerIDOf(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.mu.workers[id]
	if w == nil {
		return nil, status.Errorf(codes.PermissionDenied, "worker id %q was not issued by the runner for this job", id)
	}
	return w, nil
}

// Control implements BeamFnControl.
func (s *Server) Control(stream fnpb.BeamFnControl_ControlServer) error {
	w, err := s.worker(stream.Context())
	if err != nil {
		return err
	}
	return w.serveControl(stream)
}

// GetProcessBundleDescriptor implements BeamFnControl.
func (s *Server) GetProcessBundleDescriptor(_ context.Context, req *fnpb.GetProcessBundleDescriptorRequest) (*fnpb.ProcessBundleDescriptor, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.mu.descriptors[req.GetProcessBundleDescriptorId()]
	if d == nil {
		return nil, status.Errorf(codes.NotFound, "unknown process bundle descriptor %q", req.GetProcessBundleDescriptorId())
	}
	return d, nil
}

// Data implements BeamFnData.
func (s *Server) Data(stream fnpb.BeamFnData_DataServer) error {
	w, err := s.worker(stream.Context())
	if err != nil {
		return err
	}
	err = w.Data.Serve(stream)
	if errors.Is(err, dataplane.ErrAlreadyAttached) {
		return status.Error(codes.AlreadyExists, err.Error())
	}
	// The worker cannot run another bundle without its data stream.
	w.fail(&StreamError{Worker: w.ID, Stream: "data", Err: err})
	return nil
}

// State implements BeamFnState.
func (s *Server) State(stream fnpb.BeamFnState_StateServer) error {
	w, err := s.worker(stream.Context())
	if err != nil {
		return err
	}
	err = w.State.Serve(stream)
	// A bundle waiting on state would never hear back: fail the worker.
	w.fail(&StreamError{Worker: w.ID, Stream: "state", Err: err})
	return nil
}

// Logging implements BeamFnLogging.
func (s *Server) Logging(stream fnpb.BeamFnLogging_LoggingServer) error {
	w, err := s.worker(stream.Context())
	if err != nil {
		return err
	}
	id := w.ID
	for {
		list, err := stream.Recv()
		if err != nil {
			return nil
		}
		for _, e := range list.GetLogEntries() {
			if s.cfg.Log != nil {
				s.cfg.Log(id, e)
			}
		}
	}
}

// GetProvisionInfo implements ProvisionService.
func (s *Server) GetProvisionInfo(ctx context.Context, _ *fnpb.GetProvisionInfoRequest) (*fnpb.GetProvisionInfoResponse, error) {
	w, err := s.worker(ctx)
	if err != nil {
		return nil, err
	}
	if s.cfg.Provision == nil {
		return nil, status.Error(codes.Unavailable, "no provision info configured")
	}
	info, err := s.cfg.Provision(w.ID)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &fnpb.GetProvisionInfoResponse{Info: info}, nil
}
