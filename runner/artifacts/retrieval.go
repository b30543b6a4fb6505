package artifacts

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// chunkSize bounds each GetArtifact response well under gRPC's default 4 MiB
// receive limit, which SDK harnesses keep.
const chunkSize = 1 << 20

// Retrieval implements jobpb.ArtifactRetrievalServiceServer for one job.
// It serves only files staged for the job: declared by its environments
// and lying directly in the job's own directory, opened through that
// directory. A file the client declared but never staged (a path on the
// server, /etc/shadow say) is never opened.
type Retrieval struct {
	jobpb.UnimplementedArtifactRetrievalServiceServer
	dir   string
	files map[string]bool // names in dir of the declared, staged files
}

// NewRetrieval serves the artifacts p's environments declare that were
// staged into dir.
func NewRetrieval(p *pipepb.Pipeline, dir string) *Retrieval {
	r := &Retrieval{dir: filepath.Clean(dir), files: map[string]bool{}}
	eachEnv(p, func(_ string, env *pipepb.Environment) {
		for _, dep := range env.GetDependencies() {
			if name, ok := r.staged(dep); ok {
				r.files[name] = true
			}
		}
	})
	return r
}

// staged returns the name in the job's directory of a staged file
// artifact; ok is false for anything else.
func (r *Retrieval) staged(a *pipepb.ArtifactInformation) (string, bool) {
	path, ok := filePath(a)
	if !ok || r.dir == "." || !filepath.IsAbs(path) {
		return "", false
	}
	path = filepath.Clean(path)
	if filepath.Dir(path) != r.dir {
		return "", false
	}
	return filepath.Base(path), true
}

// ResolveArtifacts returns the artifacts unchanged: staging already turned
// them into files this service can serve.
func (r *Retrieval) ResolveArtifacts(_ context.Context, req *jobpb.ResolveArtifactsRequest) (*jobpb.ResolveArtifactsResponse, error) {
	return &jobpb.ResolveArtifactsResponse{Replacements: req.GetArtifacts()}, nil
}

// GetArtifact streams the artifact's bytes in chunks.
func (r *Retrieval) GetArtifact(req *jobpb.GetArtifactRequest, stream jobpb.ArtifactRetrievalService_GetArtifactServer) error {
	src, err := r.open(req.GetArtifact())
	if err != nil {
		return err
	}
	defer src.Close()
	buf := make([]byte, chunkSize)
	for {
		n, err := io.ReadFull(src, buf)
		if n > 0 {
			if serr := stream.Send(&jobpb.GetArtifactResponse{Data: buf[:n]}); serr != nil {
				return serr
			}
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil
		}
		if err != nil {
			return status.Errorf(codes.Internal, "reading artifact: %v", err)
		}
	}
}

// Open opens one of the job's staged artifacts, as GetArtifact would
// serve it: the runner reads them itself to start SDK workers locally.
func (r *Retrieval) Open(a *pipepb.ArtifactInformation) (io.ReadCloser, error) { return r.open(a) }

func (r *Retrieval) open(a *pipepb.ArtifactInformation) (io.ReadCloser, error) {
	switch a.GetTypeUrn() {
	case TypeFile:
		path, ok := filePath(a)
		if !ok {
			return nil, status.Errorf(codes.InvalidArgument, "bad file artifact payload")
		}
		name, ok := r.staged(a)
		if !ok || !r.files[name] {
			return nil, status.Errorf(codes.NotFound, "file artifact %q was not staged for this job (a LOOPBACK job's EXTERNAL environments are not: their workers run in the client)", path)
		}
		// Opened within the job's directory: a symlink cannot lead out.
		f, err := os.OpenInRoot(r.dir, name)
		if err != nil {
			return nil, status.Errorf(codes.NotFound, "opening artifact: %v", err)
		}
		return f, nil
	case TypeEmbedded:
		var pl pipepb.EmbeddedFilePayload
		if err := proto.Unmarshal(a.GetTypePayload(), &pl); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "bad embedded artifact payload: %v", err)
		}
		return io.NopCloser(bytes.NewReader(pl.GetData())), nil
	default:
		return nil, status.Errorf(codes.InvalidArgument, "unsupported artifact type %q: only %s and %s can be retrieved", a.GetTypeUrn(), TypeFile, TypeEmbedded)
	}
}

func filePath(a *pipepb.ArtifactInformation) (string, bool) {
	if a.GetTypeUrn() != TypeFile {
		return "", false
	}
	var pl pipepb.ArtifactFilePayload
	if err := proto.Unmarshal(a.GetTypePayload(), &pl); err != nil {
		return "", false
	}
	return pl.GetPath(), true
}
