package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal/extworker"
	"google.golang.org/grpc"

	"github.com/beam-runner/beam-runner/testsupport/testwait"
)

// pool is Beam's LOOPBACK worker pool behind a server of our own that
// records which workers the runner started and stopped.
type pool struct {
	*extworker.Loopback
	lis net.Listener
	srv *grpc.Server

	mu struct {
		sync.Mutex
		started []string
		stopped map[string]bool
	}
}

func startPool(ctx context.Context) (*pool, error) {
	lb, err := extworker.StartLoopback(ctx, 0) // its own listener goes unused
	if err != nil {
		return nil, err
	}
	lis, err := net.Listen("tcp", "localhost:0")
	if err != nil {
		lb.Stop(ctx)
		return nil, err
	}
	p := &pool{Loopback: lb, lis: lis, srv: grpc.NewServer()}
	p.mu.stopped = map[string]bool{}
	fnpb.RegisterBeamFnExternalWorkerPoolServer(p.srv, p)
	go p.srv.Serve(lis)
	return p, nil
}

func (p *pool) addr() string { return p.lis.Addr().String() }

func (p *pool) stop() {
	p.Loopback.Stop(context.Background())
	p.srv.Stop()
}

func (p *pool) StartWorker(ctx context.Context, req *fnpb.StartWorkerRequest) (*fnpb.StartWorkerResponse, error) {
	p.mu.Lock()
	p.mu.started = append(p.mu.started, req.GetWorkerId())
	p.mu.Unlock()
	return p.Loopback.StartWorker(ctx, req)
}

func (p *pool) StopWorker(ctx context.Context, req *fnpb.StopWorkerRequest) (*fnpb.StopWorkerResponse, error) {
	p.mu.Lock()
	p.mu.stopped[req.GetWorkerId()] = true
	p.mu.Unlock()
	return p.Loopback.StopWorker(ctx, req)
}

// startedCount marks a point in time: workers started after it are
// startedSince(mark).
func (p *pool) startedCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.mu.started)
}

func (p *pool) startedSince(mark int) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.mu.started[mark:]...)
}

// awaitStopped polls until the runner has told every worker started since
// mark to stop, or fails after limit naming those it has not.
func (p *pool) awaitStopped(mark int, limit time.Duration) error {
	var left []string
	err := testwait.For(context.Background(), limit, func() (bool, error) {
		ids := p.startedSince(mark)
		if len(ids) == 0 {
			return false, fmt.Errorf("the runner never started a worker in the pool")
		}
		left = p.notStopped(ids)
		return len(left) == 0, nil
	})
	if errors.Is(err, testwait.ErrExpired) {
		return fmt.Errorf("the runner did not call StopWorker for %v: %w", left, err)
	}
	return err
}

func (p *pool) notStopped(ids []string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var left []string
	for _, id := range ids {
		if !p.mu.stopped[id] {
			left = append(left, id)
		}
	}
	return left
}
