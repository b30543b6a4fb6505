package fnapi_test

import (
	"context"
	"github.com/beam-runner/beam-runner/testsupport/syncbuf"
	"log/slog"
	"strings"
	"testing"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/beam-runner/beam-runner/fnapi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

type noRetrieval struct {
	jobpb.UnimplementedArtifactRetrievalServiceServer
}

// Every service refuses a call whose worker id the runner did not issue,
// or that has none, and logs it; the issued id gets through.
func TestUnissuedWorkerIDRefused(t *testing.T) {
	var logs syncbuf.Buffer
	srv, err := fnapi.Start(fnapi.Config{
		Logger:    slog.New(slog.NewTextHandler(&logs, nil)),
		Retrieval: noRetrieval{},
		Provision: func(string) (*fnpb.ProvisionInfo, error) { return &fnpb.ProvisionInfo{}, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	srv.AddWorker("job1-w0")
	cc, err := grpc.NewClient(srv.Endpoint(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	for _, tc := range []struct {
		id   string
		want codes.Code
	}{
		{"job2-w0", codes.PermissionDenied},
		{"", codes.Unauthenticated},
	} {
		for name, call := range calls(cc) {
			if got := status.Code(call(withID(t, tc.id))); got != tc.want {
				t.Errorf("%s with worker id %q: got %v, want %v", name, tc.id, got, tc.want)
			}
		}
	}
	if err := calls(cc)["provision"](withID(t, "job1-w0")); err != nil {
		t.Errorf("provision as the issued worker: %v", err)
	}
	if got := status.Code(calls(cc)["artifacts"](withID(t, "job1-w0"))); got != codes.Unimplemented {
		t.Errorf("artifact retrieval as the issued worker: got %v, want it to reach the service (Unimplemented)", got)
	}
	if n := strings.Count(logs.String(), "refused a connection"); n != 2*len(calls(cc)) {
		t.Errorf("logged %d refusals, want %d:\n%s", n, 2*len(calls(cc)), logs.String())
	}
	if !strings.Contains(logs.String(), "worker_id=job2-w0") || !strings.Contains(logs.String(), "peer=127.0.0.1:") {
		t.Errorf("the refusals do not name the id and the peer:\n%s", logs.String())
	}
}

func withID(t *testing.T, id string) context.Context {
	ctx := t.Context()
	if id != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "worker_id", id)
	}
	return ctx
}

// calls makes one call on each Fn API service; a stream's refusal shows on
// its first receive.
func calls(cc *grpc.ClientConn) map[string]func(context.Context) error {
	return map[string]func(context.Context) error{
		"control": func(ctx context.Context) error {
			s, err := fnpb.NewBeamFnControlClient(cc).Control(ctx)
			if err == nil {
				_, err = s.Recv()
			}
			return err
		},
		"descriptor": func(ctx context.Context) error {
			_, err := fnpb.NewBeamFnControlClient(cc).GetProcessBundleDescriptor(ctx, &fnpb.GetProcessBundleDescriptorRequest{})
			return err
		},
		"data": func(ctx context.Context) error {
			s, err := fnpb.NewBeamFnDataClient(cc).Data(ctx)
			if err == nil {
				_, err = s.Recv()
			}
			return err
		},
		"state": func(ctx context.Context) error {
			s, err := fnpb.NewBeamFnStateClient(cc).State(ctx)
			if err == nil {
				_, err = s.Recv()
			}
			return err
		},
		"logging": func(ctx context.Context) error {
			s, err := fnpb.NewBeamFnLoggingClient(cc).Logging(ctx)
			if err == nil {
				_, err = s.Recv()
			}
			return err
		},
		"provision": func(ctx context.Context) error {
			_, err := fnpb.NewProvisionServiceClient(cc).GetProvisionInfo(ctx, &fnpb.GetProvisionInfoRequest{})
			return err
		},
		"artifacts": func(ctx context.Context) error {
			_, err := jobpb.NewArtifactRetrievalServiceClient(cc).ResolveArtifacts(ctx, &jobpb.ResolveArtifactsRequest{})
			return err
		},
	}
}
