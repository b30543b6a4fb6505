package jobs

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal/runnerlib"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/beam-runner/beam-runner/runner/artifacts"
	"github.com/beam-runner/beam-runner/worker"
)

func TestLoopbackOptionsOfEachSDK(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts map[string]any
		want bool
	}{
		{"python", map[string]any{"beam:option:environment_type:v1": "LOOPBACK"}, true},
		{"java", map[string]any{"beam:option:default_environment_type:v1": "loopback"}, true},
		{"go", map[string]any{"beam:option:go_options:v1": map[string]any{"options": map[string]any{"environment_type": "LOOPBACK"}}}, true},
		{"java docker", map[string]any{"beam:option:default_environment_type:v1": "DOCKER"}, false},
		{"config only", map[string]any{"beam:option:environment_config:v1": "LOOPBACK"}, false},
		{"none", nil, false},
	} {
		s, err := structpb.NewStruct(tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		if got := LoopbackOptions(s); got != tc.want {
			t.Errorf("%s: LoopbackOptions = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A LOOPBACK job's in-client (EXTERNAL) environments keep the client's
// own paths: their workers never retrieve artifacts. Its other
// environments, and an EXTERNAL one of the server's worker pools (whose
// boot does retrieve them), are staged; so is everything of a job that is
// not LOOPBACK.
func TestLoopbackInClientEnvironmentsAreNotStaged(t *testing.T) {
	src := filepath.Join(t.TempDir(), "classes.jar")
	if err := os.WriteFile(src, []byte("jar"), 0o644); err != nil {
		t.Fatal(err)
	}
	external := func(url string) *pipepb.Environment {
		pl, _ := proto.Marshal(&pipepb.ExternalPayload{Endpoint: &pipepb.ApiServiceDescriptor{Url: url}})
		return &pipepb.Environment{Urn: worker.URNExternal, Payload: pl,
			Capabilities: []string{"beam:version:sdk_base:apache/beam_java17_sdk:2.73.0"}}
	}
	docker, _ := proto.Marshal(&pipepb.DockerPayload{ContainerImage: "apache/beam_python3.11_sdk:2.77.0"})
	for _, tc := range []struct {
		name     string
		env      string
		unstaged map[string]bool
	}{
		{"loopback", "LOOPBACK", map[string]bool{"java": true}},
		{"external", "EXTERNAL", map[string]bool{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := map[string]string{}
			e := newEnv(t, &fakeExec{execute: func(ctx context.Context, j *Job) error {
				for id, env := range j.Pipeline.GetComponents().GetEnvironments() {
					var pl pipepb.ArtifactFilePayload
					proto.Unmarshal(env.GetDependencies()[0].GetTypePayload(), &pl)
					got[id] = pl.GetPath()
				}
				return nil
			}})
			p := &pipepb.Pipeline{Components: &pipepb.Components{Environments: map[string]*pipepb.Environment{
				"java":  external("localhost:40123"),
				"pools": external(worker.PoolsEndpoint),
				"py":    {Urn: worker.URNDocker, Payload: docker},
			}}}
			tp, _ := proto.Marshal(&pipepb.ArtifactFilePayload{Path: src})
			for _, env := range p.Components.Environments {
				env.Dependencies = []*pipepb.ArtifactInformation{{TypeUrn: artifacts.TypeFile, TypePayload: tp,
					RoleUrn: "beam:artifact:role:staging_to:v1"}}
			}
			opts, _ := structpb.NewStruct(map[string]any{"beam:option:default_environment_type:v1": tc.env})
			ctx := ctxT(t)
			prep, err := e.cli.Prepare(ctx, &jobpb.PrepareJobRequest{Pipeline: p, PipelineOptions: opts})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := runnerlib.Stage(ctx, prep.GetPreparationId(), prep.GetArtifactStagingEndpoint().GetUrl(), src, prep.GetStagingSessionToken()); err != nil {
				t.Fatalf("Stage: %v", err)
			}
			run, err := e.cli.Run(ctx, &jobpb.RunJobRequest{PreparationId: prep.GetPreparationId()})
			if err != nil {
				t.Fatal(err)
			}
			if err := runnerlib.WaitForCompletion(ctx, e.cli, run.GetJobId()); err != nil {
				t.Fatal(err)
			}
			for _, id := range []string{"java", "pools", "py"} {
				if kept := got[id] == src; kept != tc.unstaged[id] {
					t.Errorf("environment %s: dependency at %q; want unstaged %v", id, got[id], tc.unstaged[id])
				}
				if got[id] == "" {
					t.Errorf("environment %s: no dependency seen", id)
				}
			}
		})
	}
}
