package artifacts

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal/runnerlib"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// serve starts a loopback gRPC server with the given registrations.
func serve(t *testing.T, register func(*grpc.Server)) *grpc.ClientConn {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	register(srv)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

func fileDep(t *testing.T, path, stagedName string) *pipepb.ArtifactInformation {
	t.Helper()
	tp, _ := proto.Marshal(&pipepb.ArtifactFilePayload{Path: path})
	rp, _ := proto.Marshal(&pipepb.ArtifactStagingToRolePayload{StagedName: stagedName})
	return &pipepb.ArtifactInformation{TypeUrn: TypeFile, TypePayload: tp, RoleUrn: RoleStagingTo, RolePayload: rp}
}

func pipelineWith(envs map[string][]*pipepb.ArtifactInformation) *pipepb.Pipeline {
	p := &pipepb.Pipeline{Components: &pipepb.Components{Environments: map[string]*pipepb.Environment{}}}
	for id, deps := range envs {
		p.Components.Environments[id] = &pipepb.Environment{Urn: "beam:env:loopback:v1", Dependencies: deps}
	}
	return p
}

func fetch(t *testing.T, cli jobpb.ArtifactRetrievalServiceClient, a *pipepb.ArtifactInformation) ([]byte, error) {
	t.Helper()
	st, err := cli.GetArtifact(context.Background(), &jobpb.GetArtifactRequest{Artifact: a})
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	for {
		r, err := st.Recv()
		if err == io.EOF {
			return buf.Bytes(), nil
		}
		if err != nil {
			return nil, err
		}
		buf.Write(r.GetData())
	}
}

// TestStagingRoundTrip stages a file with the Go SDK's own staging client,
// then serves it back through the retrieval service.
func TestStagingRoundTrip(t *testing.T) {
	src := filepath.Join(t.TempDir(), "payload.bin")
	want := bytes.Repeat([]byte("beam!"), 600_000) // ~3 MB: several chunks
	if err := os.WriteFile(src, want, 0o644); err != nil {
		t.Fatal(err)
	}
	p := pipelineWith(map[string][]*pipepb.ArtifactInformation{
		"go":    {fileDep(t, src, "../../escape/worker")},
		"other": {fileDep(t, src, "../../escape/worker")}, // same artifact twice
		"empty": nil,
	})
	staging := NewStaging()
	dir := filepath.Join(t.TempDir(), "job1")
	if err := staging.Register("tok", dir, EnvDeps(p)); err != nil {
		t.Fatal(err)
	}
	cc := serve(t, func(s *grpc.Server) { jobpb.RegisterArtifactStagingServiceServer(s, staging) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := runnerlib.StageViaPortableAPI(ctx, cc, "", "tok"); err != nil {
		t.Fatalf("StageViaPortableAPI: %v", err)
	}
	deps, err := staging.Wait(ctx, "tok")
	if err != nil {
		t.Fatal(err)
	}
	staged := Apply(p, deps)
	got := staged.GetComponents().GetEnvironments()["go"].GetDependencies()
	if len(got) != 1 || got[0].GetTypeUrn() != TypeFile || got[0].GetRoleUrn() != RoleStagingTo {
		t.Fatalf("staged deps = %v", got)
	}
	path, _ := filePath(got[0])
	if filepath.Dir(path) != dir || !strings.HasSuffix(path, "-worker") {
		t.Errorf("staged path %q not a file named after 'worker' directly in %q", path, dir)
	}
	if b, err := os.ReadFile(path); err != nil || !bytes.Equal(b, want) {
		t.Fatalf("staged file differs (err %v, %d bytes)", err, len(b))
	}
	if !bytes.Equal(got[0].GetRolePayload(), p.Components.Environments["go"].Dependencies[0].RolePayload) {
		t.Error("role payload not kept")
	}

	rc := jobpb.NewArtifactRetrievalServiceClient(serve(t, func(s *grpc.Server) {
		jobpb.RegisterArtifactRetrievalServiceServer(s, NewRetrieval(staged))
	}))
	b, err := fetch(t, rc, got[0])
	if err != nil || !bytes.Equal(b, want) {
		t.Fatalf("retrieved %d bytes, err %v", len(b), err)
	}
	// The original client path is not declared by the staged pipeline.
	if _, err := fetch(t, rc, fileDep(t, src, "x")); status.Code(err) != codes.NotFound {
		t.Errorf("undeclared file: got %v, want NotFound", err)
	}
}

func TestRetrievalEmbeddedAndUnknownTypes(t *testing.T) {
	pl, _ := proto.Marshal(&pipepb.EmbeddedFilePayload{Data: []byte("hello")})
	rc := jobpb.NewArtifactRetrievalServiceClient(serve(t, func(s *grpc.Server) {
		jobpb.RegisterArtifactRetrievalServiceServer(s, NewRetrieval(&pipepb.Pipeline{}))
	}))
	b, err := fetch(t, rc, &pipepb.ArtifactInformation{TypeUrn: TypeEmbedded, TypePayload: pl})
	if err != nil || string(b) != "hello" {
		t.Fatalf("embedded: %q, %v", b, err)
	}
	_, err = fetch(t, rc, &pipepb.ArtifactInformation{TypeUrn: "beam:artifact:type:url:v1"})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "beam:artifact:type:url:v1") {
		t.Errorf("url type: got %v, want InvalidArgument naming the type", err)
	}
	_, err = fetch(t, rc, nil)
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("nil artifact: got %v", err)
	}
}

func TestWaitWithoutStagingReturnsOriginal(t *testing.T) {
	s := NewStaging()
	orig := Deps{"e": {fileDep(t, "/x", "y")}}
	s.Register("tok", t.TempDir(), orig)
	got, err := s.Wait(context.Background(), "tok")
	if err != nil || len(got["e"]) != 1 {
		t.Fatalf("Wait = %v, %v", got, err)
	}
	if _, err := s.Wait(context.Background(), "nope"); err == nil {
		t.Error("Wait on unknown token succeeded")
	}
	if err := s.Register("tok", "", nil); err == nil {
		t.Error("duplicate Register succeeded")
	}
}

func TestUnknownStagingToken(t *testing.T) {
	cli := jobpb.NewArtifactStagingServiceClient(serve(t, func(s *grpc.Server) {
		jobpb.RegisterArtifactStagingServiceServer(s, NewStaging())
	}))
	st, err := cli.ReverseArtifactRetrievalService(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	st.Send(&jobpb.ArtifactResponseWrapper{StagingToken: "nope"})
	if _, err := st.Recv(); status.Code(err) != codes.NotFound {
		t.Errorf("got %v, want NotFound", err)
	}
}
