// Package artifacts stages a job's artifacts from the submitting client onto
// local disk (ArtifactStagingService) and serves them to the job's SDK
// harnesses (ArtifactRetrievalService).
//
// Staging uses Beam's reverse-retrieval protocol: the client opens
// ReverseArtifactRetrievalService and sends its staging token; the server
// then asks the client (ResolveArtifacts, GetArtifact) for each environment's
// dependencies, writes them to files, and ends the stream when done.
package artifacts

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// Deps maps an environment id to its dependencies.
type Deps map[string][]*pipepb.ArtifactInformation

// Staging implements jobpb.ArtifactStagingServiceServer. Sessions are
// registered by the job service at Prepare and collected at Run.
type Staging struct {
	jobpb.UnimplementedArtifactStagingServiceServer

	mu struct {
		sync.Mutex
		sessions map[string]*session // by staging token
	}
}

// session is the staging state of one preparation. Fields under Staging.mu.
type session struct {
	dir    string
	orig   Deps
	staged Deps          // set by the last successful attempt
	err    error         // set by the last failed attempt
	active chan struct{} // non-nil while an attempt runs; closed when it ends
}

// NewStaging returns a staging service with no sessions.
func NewStaging() *Staging {
	s := &Staging{}
	s.mu.sessions = map[string]*session{}
	return s
}

// EnvDeps extracts every environment's dependencies from a pipeline,
// those of anyof alternatives included.
func EnvDeps(p *pipepb.Pipeline) Deps {
	d := Deps{}
	eachEnv(p, func(key string, env *pipepb.Environment) {
		d[key] = cloneDeps(env.GetDependencies())
	})
	return d
}

// Leave drops from d the environments of p (anyof alternatives
// included) for which leave is true: their dependencies stay as the
// client declared them, never fetched.
func (d Deps) Leave(p *pipepb.Pipeline, leave func(*pipepb.Environment) bool) Deps {
	out := maps.Clone(d)
	eachEnv(p, func(key string, env *pipepb.Environment) {
		if leave(env) {
			delete(out, key)
		}
	})
	return out
}

// Apply returns a copy of p whose environments depend on d (environments
// not in d keep their dependencies).
func Apply(p *pipepb.Pipeline, d Deps) *pipepb.Pipeline {
	out := proto.Clone(p).(*pipepb.Pipeline)
	for id, env := range out.GetComponents().GetEnvironments() {
		applyEnv(id, env, d)
	}
	return out
}

// Register opens a staging session for token; artifacts are written to dir.
func (s *Staging) Register(token, dir string, deps Deps) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.mu.sessions[token]; ok {
		return fmt.Errorf("staging token %q already registered", token)
	}
	s.mu.sessions[token] = &session{dir: dir, orig: deps}
	return nil
}

// Forget drops the session for token (the files are the caller's to remove).
func (s *Staging) Forget(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.mu.sessions, token)
}

// Wait blocks while a staging attempt for token is in progress, then returns
// the dependencies rewritten to staged files. When the client never staged
// (nothing to stage, or an SDK that skips staging) it returns the original
// dependencies unchanged, so Run can proceed.
func (s *Staging) Wait(ctx context.Context, token string) (Deps, error) {
	for {
		s.mu.Lock()
		sess, ok := s.mu.sessions[token]
		if !ok {
			s.mu.Unlock()
			return nil, fmt.Errorf("unknown staging token %q", token)
		}
		active, staged, orig, err := sess.active, sess.staged, sess.orig, sess.err
		s.mu.Unlock()
		if active == nil {
			if staged != nil {
				return staged, nil
			}
			if err != nil {
				return nil, fmt.Errorf("staging artifacts failed: %w", err)
			}
			return orig, nil
		}
		select {
		case <-active:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// ReverseArtifactRetrievalService implements the staging side of the
// protocol. One attempt at a time per token; the Go SDK retries a failed
// attempt on a new stream, which starts over from the original dependencies.
func (s *Staging) ReverseArtifactRetrievalService(stream jobpb.ArtifactStagingService_ReverseArtifactRetrievalServiceServer) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	token := first.GetStagingToken()
	sess, done, err := s.begin(token)
	if err != nil {
		return err
	}
	staged, err := stageAll(&peer{stream: stream}, sess.dir, sess.orig)
	s.end(sess, done, staged, err)
	return err
}

func (s *Staging) begin(token string) (*session, chan struct{}, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.mu.sessions[token]
	if !ok {
		return nil, nil, status.Errorf(codes.NotFound, "no such staging token: %q", token)
	}
	if sess.active != nil {
		return nil, nil, status.Errorf(codes.FailedPrecondition, "staging for token %q already in progress", token)
	}
	sess.active = make(chan struct{})
	return sess, sess.active, nil
}

func (s *Staging) end(sess *session, done chan struct{}, staged Deps, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess.staged, sess.err, sess.active = staged, err, nil
	if err != nil {
		sess.staged = nil
	}
	close(done)
}

// stageAll resolves and fetches each environment's dependencies, in
// environment id order so staging is deterministic.
func stageAll(p *peer, dir string, orig Deps) (Deps, error) {
	ids := slices.Sorted(maps.Keys(orig))
	w := &writer{dir: dir, done: map[string]*pipepb.ArtifactInformation{}}
	out := Deps{}
	for _, id := range ids {
		deps, err := stageEnv(p, w, orig[id], strings.Contains(id, "/anyof/"))
		if err != nil {
			return nil, fmt.Errorf("environment %q: %w", id, err)
		}
		out[id] = deps
	}
	return out, nil
}

// stageEnv stages one environment's dependencies. An anyof alternative
// whose dependencies the client left deferred after resolving them keeps
// them unstaged: a client that cannot resolve them cannot send them either
// (the Go SDK resolves only top-level environments' artifacts, through the
// expansion service, and ends the stream on a deferred one), and the job
// may well run on another alternative. The runner never picks it without
// its artifacts (worker's anyof choice skips it).
func stageEnv(p *peer, w *writer, deps []*pipepb.ArtifactInformation, alternative bool) ([]*pipepb.ArtifactInformation, error) {
	if len(deps) == 0 {
		return nil, nil
	}
	resolved, err := p.resolve(deps)
	if err != nil {
		return nil, err
	}
	if alternative && slices.ContainsFunc(resolved, isDeferred) {
		return resolved, nil
	}
	out := make([]*pipepb.ArtifactInformation, 0, len(resolved))
	for _, dep := range resolved {
		staged, err := w.stage(p, dep)
		if err != nil {
			return nil, err
		}
		out = append(out, staged)
	}
	return out, nil
}

// TypeDeferred is an artifact that its SDK must resolve before staging.
const TypeDeferred = "beam:artifact:type:deferred:v1"

func isDeferred(a *pipepb.ArtifactInformation) bool { return a.GetTypeUrn() == TypeDeferred }

// peer speaks the server's half of the reverse-retrieval stream.
type peer struct {
	stream jobpb.ArtifactStagingService_ReverseArtifactRetrievalServiceServer
}

func (p *peer) resolve(deps []*pipepb.ArtifactInformation) ([]*pipepb.ArtifactInformation, error) {
	err := p.stream.Send(&jobpb.ArtifactRequestWrapper{
		Request: &jobpb.ArtifactRequestWrapper_ResolveArtifact{
			ResolveArtifact: &jobpb.ResolveArtifactsRequest{Artifacts: deps},
		},
	})
	if err != nil {
		return nil, err
	}
	resp, err := p.stream.Recv()
	if err != nil {
		return nil, err
	}
	r, ok := resp.GetResponse().(*jobpb.ArtifactResponseWrapper_ResolveArtifactResponse)
	if !ok {
		return nil, status.Errorf(codes.InvalidArgument, "expected a resolve_artifact_response, got %T", resp.GetResponse())
	}
	return r.ResolveArtifactResponse.GetReplacements(), nil
}

// get asks the client for one artifact and passes each chunk to write,
// until the client marks a response is_last.
func (p *peer) get(dep *pipepb.ArtifactInformation, write func([]byte) error) error {
	err := p.stream.Send(&jobpb.ArtifactRequestWrapper{
		Request: &jobpb.ArtifactRequestWrapper_GetArtifact{
			GetArtifact: &jobpb.GetArtifactRequest{Artifact: dep},
		},
	})
	if err != nil {
		return err
	}
	for {
		resp, err := p.stream.Recv()
		if err != nil {
			return err
		}
		r, ok := resp.GetResponse().(*jobpb.ArtifactResponseWrapper_GetArtifactResponse)
		if !ok {
			return status.Errorf(codes.InvalidArgument, "expected a get_artifact_response, got %T", resp.GetResponse())
		}
		if err := write(r.GetArtifactResponse.GetData()); err != nil {
			return err
		}
		if resp.GetIsLast() {
			return nil
		}
	}
}

// cloneDeps deep-copies deps so callers can keep their pipeline immutable.
func cloneDeps(in []*pipepb.ArtifactInformation) []*pipepb.ArtifactInformation {
	out := make([]*pipepb.ArtifactInformation, len(in))
	for i, d := range in {
		out[i] = proto.Clone(d).(*pipepb.ArtifactInformation)
	}
	return out
}
