package fnapi

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// Beam's Fn API has no authentication; the worker ids the runner issues
// are the only thing telling its workers from anyone else who can reach
// the port. Every call on every service (artifact retrieval included)
// must carry one of this job's ids, so a stray or hostile client cannot
// read artifacts or pipeline options, nor take a worker's place. An id
// travels in clear text: this keeps out mistakes and scanners, not an
// attacker who can watch the network (docs/operations.md).

func (s *Server) unaryAuth(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if err := s.authorize(ctx, info.FullMethod); err != nil {
		return nil, err
	}
	return handler(ctx, req)
}

func (s *Server) streamAuth(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if err := s.authorize(ss.Context(), info.FullMethod); err != nil {
		return err
	}
	return handler(srv, ss)
}

// authorize admits a call whose worker_id metadata names a worker this
// server registered, and logs and refuses any other.
func (s *Server) authorize(ctx context.Context, method string) error {
	id := workerIDOf(ctx)
	if id != "" && s.issued(id) {
		return nil
	}
	from := "unknown peer"
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		from = p.Addr.String()
	}
	s.cfg.Logger.Warn("fn api: refused a connection without a worker id this job issued",
		"peer", from, "method", method, "worker_id", id)
	if id == "" {
		return status.Error(codes.Unauthenticated, "fn api: the call carries no worker_id metadata; only workers the runner started may connect")
	}
	return status.Errorf(codes.PermissionDenied, "fn api: worker id %q was not issued by the runner for this job", id)
}

func workerIDOf(ctx context.Context) string {
	md, _ := metadata.FromIncomingContext(ctx)
	if ids := md.Get("worker_id"); len(ids) > 0 {
		return ids[0]
	}
	return ""
}

func (s *Server) issued(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.workers[id] != nil
}
