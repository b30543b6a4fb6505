package artifacts

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal/runnerlib"
	"github.com/beam-runner/beam-runner/worker/sdkenv"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/beam-runner/beam-runner/testsupport/testkit"
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

// stageWithGoClient stages p's artifacts into a fresh job directory with
// the Go SDK's own staging client, returning p rewritten to the staged
// files and the directory.
func stageWithGoClient(t *testing.T, p *pipepb.Pipeline) (*pipepb.Pipeline, string) {
	t.Helper()
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
	return Apply(p, deps), dir
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
	staged, dir := stageWithGoClient(t, p)
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
		jobpb.RegisterArtifactRetrievalServiceServer(s, NewRetrieval(staged, dir))
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
		jobpb.RegisterArtifactRetrievalServiceServer(s, NewRetrieval(&pipepb.Pipeline{}, t.TempDir()))
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

// A job that declares a server-side file it never staged (/etc/shadow, or
// a file outside its directory reached through ".." or a symlink) cannot
// read it: the file is never opened.
func TestRetrievalServesOnlyStagedFiles(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(outside, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	staged := filepath.Join(dir, "ok.txt")
	if err := os.WriteFile(staged, []byte("ok"), 0o600); err != nil {
		t.Fatal(err)
	}
	declared := []*pipepb.ArtifactInformation{
		fileDep(t, "/etc/shadow", "shadow"),
		fileDep(t, outside, "secret"),
		fileDep(t, filepath.Join(dir, "..", filepath.Base(filepath.Dir(outside)), "secret"), "dotdot"),
		fileDep(t, link, "link"),
		fileDep(t, staged, "ok"),
	}
	p := pipelineWith(map[string][]*pipepb.ArtifactInformation{"env": declared})
	rc := jobpb.NewArtifactRetrievalServiceClient(serve(t, func(s *grpc.Server) {
		jobpb.RegisterArtifactRetrievalServiceServer(s, NewRetrieval(p, dir))
	}))
	for _, a := range declared[:4] {
		path, _ := filePath(a)
		if b, err := fetch(t, rc, a); err == nil || len(b) > 0 {
			t.Errorf("declared %s: got %q, %v; want refused", path, b, err)
		}
	}
	if b, err := fetch(t, rc, declared[4]); err != nil || string(b) != "ok" {
		t.Errorf("staged file: got %q, %v", b, err)
	}
}

// NewRoot makes a private directory and removes roots whose server died.
func TestNewRootIsPrivateAndRemovesDeadRoots(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dead := filepath.Join(tmp, rootPattern+"dead")
	live := filepath.Join(tmp, rootPattern+"live")
	for dir, pid := range map[string]int{dead: testkit.DeadPid(t), live: os.Getpid()} {
		if err := os.MkdirAll(filepath.Join(dir, "job"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(pid)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	root, err := NewRoot()
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(root)
	if err != nil || fi.Mode().Perm() != 0o700 || filepath.Dir(root) != tmp {
		t.Fatalf("root %s: %v, mode %v; want a 0700 dir in %s", root, err, fi.Mode().Perm(), tmp)
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("dead server's root still there (%v)", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("live server's root removed: %v", err)
	}
}

// The alternatives of an anyof environment are staged and served too:
// whichever the runner picks must find its dependencies.
func TestStagingAnyOfAlternatives(t *testing.T) {
	src := filepath.Join(t.TempDir(), "reqs.txt")
	if err := os.WriteFile(src, []byte("six\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	alt := &pipepb.Environment{Urn: "beam:env:docker:v1", Dependencies: []*pipepb.ArtifactInformation{fileDep(t, src, "requirements.txt")}}
	pl, _ := proto.Marshal(&pipepb.AnyOfEnvironmentPayload{Environments: []*pipepb.Environment{{Urn: "beam:env:external:v1"}, alt}})
	p := &pipepb.Pipeline{Components: &pipepb.Components{Environments: map[string]*pipepb.Environment{
		"py": {Urn: sdkenv.URNAnyOf, Payload: pl},
	}}}
	staged, dir := stageWithGoClient(t, p)
	var got pipepb.AnyOfEnvironmentPayload
	if err := proto.Unmarshal(staged.GetComponents().GetEnvironments()["py"].GetPayload(), &got); err != nil || len(got.GetEnvironments()) != 2 {
		t.Fatalf("anyof payload after staging: %v %v", &got, err)
	}
	dep := got.GetEnvironments()[1].GetDependencies()
	path, _ := filePath(dep[0])
	if len(dep) != 1 || filepath.Dir(path) != dir {
		t.Fatalf("alternative's dependency not staged into %s: %v", dir, dep)
	}
	r := NewRetrieval(staged, dir)
	f, err := r.Open(dep[0])
	if err != nil {
		t.Fatalf("staged alternative's dependency not served: %v", err)
	}
	b, _ := io.ReadAll(f)
	f.Close()
	if string(b) != "six\n" {
		t.Errorf("served %q", b)
	}
}

// An anyof alternative whose artifacts stay deferred after the client's
// resolution (the Go SDK resolves only top-level environments) is left
// unstaged instead of failing the job's staging; the others are staged.
func TestStagingKeepsAnAlternativesDeferredArtifacts(t *testing.T) {
	src := filepath.Join(t.TempDir(), "a.jar")
	if err := os.WriteFile(src, []byte("jar"), 0o644); err != nil {
		t.Fatal(err)
	}
	deferred := &pipepb.ArtifactInformation{TypeUrn: TypeDeferred, TypePayload: []byte("opaque")}
	alt := &pipepb.Environment{Urn: "beam:env:docker:v1", Dependencies: []*pipepb.ArtifactInformation{deferred}}
	pl, _ := proto.Marshal(&pipepb.AnyOfEnvironmentPayload{Environments: []*pipepb.Environment{{Urn: "beam:env:external:v1"}, alt}})
	p := &pipepb.Pipeline{Components: &pipepb.Components{Environments: map[string]*pipepb.Environment{
		"java": {Urn: sdkenv.URNAnyOf, Payload: pl},
		"go":   {Urn: "beam:env:loopback:v1", Dependencies: []*pipepb.ArtifactInformation{fileDep(t, src, "a.jar")}},
	}}}
	staged, dir := stageWithGoClient(t, p)
	var got pipepb.AnyOfEnvironmentPayload
	if err := proto.Unmarshal(staged.GetComponents().GetEnvironments()["java"].GetPayload(), &got); err != nil {
		t.Fatal(err)
	}
	if dep := got.GetEnvironments()[1].GetDependencies(); len(dep) != 1 || dep[0].GetTypeUrn() != TypeDeferred {
		t.Errorf("the alternative's dependencies are %v, want its deferred one kept", dep)
	}
	path, _ := filePath(staged.GetComponents().GetEnvironments()["go"].GetDependencies()[0])
	if filepath.Dir(path) != dir {
		t.Errorf("the top-level environment's file was not staged into %s: %s", dir, path)
	}
}

// A deferred artifact of a top-level environment still fails staging:
// that environment has no other way to run.
func TestStagingFailsOnATopLevelDeferredArtifact(t *testing.T) {
	p := pipelineWith(map[string][]*pipepb.ArtifactInformation{
		"java": {{TypeUrn: TypeDeferred}},
	})
	staging := NewStaging()
	if err := staging.Register("tok", filepath.Join(t.TempDir(), "job"), EnvDeps(p)); err != nil {
		t.Fatal(err)
	}
	cc := serve(t, func(s *grpc.Server) { jobpb.RegisterArtifactStagingServiceServer(s, staging) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := runnerlib.StageViaPortableAPI(ctx, cc, "", "tok"); err == nil {
		t.Fatal("staging a deferred top-level artifact succeeded")
	}
}
