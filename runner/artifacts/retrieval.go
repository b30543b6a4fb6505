package artifacts

import (
	"bytes"
	"context"
	"io"
	"os"

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
// It serves only the files the job's pipeline declares, so a harness cannot
// read arbitrary files from the runner's disk.
type Retrieval struct {
	jobpb.UnimplementedArtifactRetrievalServiceServer
	files map[string]bool // declared file paths
}

// NewRetrieval serves the artifacts declared by p's environments.
func NewRetrieval(p *pipepb.Pipeline) *Retrieval {
	r := &Retrieval{files: map[string]bool{}}
	for _, env := range p.GetComponents().GetEnvironments() {
		for _, dep := range env.GetDependencies() {
			if path, ok := filePath(dep); ok {
				r.files[path] = true
			}
		}
	}
	return r
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

func (r *Retrieval) open(a *pipepb.ArtifactInformation) (io.ReadCloser, error) {
	switch a.GetTypeUrn() {
	case TypeFile:
		path, ok := filePath(a)
		if !ok {
			return nil, status.Errorf(codes.InvalidArgument, "bad file artifact payload")
		}
		if !r.files[path] {
			return nil, status.Errorf(codes.NotFound, "file artifact %q is not one of this job's artifacts", path)
		}
		f, err := os.Open(path)
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
