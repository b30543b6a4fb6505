package jobs

import (
	"net"
	"testing"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// A client is told to stage at the address it dialed, not the server's own
// name for itself (which a client behind a Kubernetes Service cannot reach).
func TestStagingEndpointIsTheDialedAddress(t *testing.T) {
	e := newEnv(t, &fakeExec{}, func(o *Options) {
		o.StagingEndpoint = func() string { return "unreachable.invalid:1" }
	})
	_, port, _ := net.SplitHostPort(e.cc.Target())
	target := net.JoinHostPort("localhost", port)
	cc, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	prep, err := jobpb.NewJobServiceClient(cc).Prepare(ctxT(t), &jobpb.PrepareJobRequest{Pipeline: pipeline(), JobName: "staging"})
	if err != nil {
		t.Fatal(err)
	}
	if got := prep.GetArtifactStagingEndpoint().GetUrl(); got != target {
		t.Errorf("staging endpoint %q, want the dialed %q", got, target)
	}
}
