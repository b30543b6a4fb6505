package worker

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

const pySDK = "beam:version:sdk_base:apache/beam_python3.11_sdk:2.77.0"

func envOf(urn string, payload proto.Message, caps ...string) *pipepb.Environment {
	b, _ := proto.Marshal(payload)
	return &pipepb.Environment{Urn: urn, Payload: b, Capabilities: caps}
}

func TestPoolTarget(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  *pipepb.Environment
		sdk  string
		asks bool
		err  string
	}{
		{"python PROCESS", envOf(URNProcess, &pipepb.ProcessPayload{}, pySDK), "python", false, ""},
		{"Beam's python image", envOf(URNDocker, &pipepb.DockerPayload{ContainerImage: "apache/beam_python3.11_sdk:2.77.0"}), "python", false, ""},
		{"Beam's go image", envOf(URNDocker, &pipepb.DockerPayload{ContainerImage: "apache/beam_go_sdk:2.77.0"}), "go", false, ""},
		{"the user's image", envOf(URNDocker, &pipepb.DockerPayload{ContainerImage: "me/mine:1"}, pySDK), "", false, ""},
		{"EXTERNAL asking for pools", envOf(URNExternal, &pipepb.ExternalPayload{Endpoint: &pipepb.ApiServiceDescriptor{Url: PoolsEndpoint}}, pySDK), "python", true, ""},
		{"EXTERNAL naming a pool", envOf(URNExternal, &pipepb.ExternalPayload{Endpoint: &pipepb.ApiServiceDescriptor{Url: "localhost:50000"}}, pySDK), "", false, ""},
		{"EXTERNAL asking, no SDK", envOf(URNExternal, &pipepb.ExternalPayload{Endpoint: &pipepb.ApiServiceDescriptor{Url: PoolsEndpoint}}), "", true, "names no SDK"},
		{"go PROCESS", envOf(URNProcess, &pipepb.ProcessPayload{Command: "/w"}, "beam:version:sdk_base:go:apache/beam_go_sdk:2.77.0"), "go", false, ""},
	} {
		sdk, asks, err := PoolTarget(tc.env)
		if sdk != tc.sdk || asks != tc.asks || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: PoolTarget = %q, %v, %v; want %q, %v, error %q", tc.name, sdk, asks, err, tc.sdk, tc.asks, tc.err)
		}
	}
}

// fakePool is a worker pool that records what it is asked.
type fakePool struct {
	fnpb.UnimplementedBeamFnExternalWorkerPoolServer
	mu      sync.Mutex
	started []*fnpb.StartWorkerRequest
	stopped []string
	refuse  string
}

func (p *fakePool) StartWorker(_ context.Context, req *fnpb.StartWorkerRequest) (*fnpb.StartWorkerResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.started = append(p.started, req)
	return &fnpb.StartWorkerResponse{Error: p.refuse}, nil
}

func (p *fakePool) StopWorker(_ context.Context, req *fnpb.StopWorkerRequest) (*fnpb.StopWorkerResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopped = append(p.stopped, req.GetWorkerId())
	return &fnpb.StopWorkerResponse{}, nil
}

func serveFakePool(t *testing.T, p *fakePool) string {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	fnpb.RegisterBeamFnExternalWorkerPoolServer(gs, p)
	go gs.Serve(lis)
	t.Cleanup(gs.Stop)
	return lis.Addr().String()
}

// A worker started on a pool is told every endpoint and the parameters,
// and stopping it asks the pool to stop it; a pool's refusal and a pool
// that does not answer are errors naming its address.
func TestStartOnPool(t *testing.T) {
	p := &fakePool{}
	addr := serveFakePool(t, p)
	ep := Endpoints{Control: "c:1", Logging: "l:1", Artifact: "a:1", Provision: "p:1"}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := StartOnPool(ctx, addr, "job-w0", ep, map[string]string{"k": "v"})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	req := p.started[0]
	if req.GetWorkerId() != "job-w0" || req.GetControlEndpoint().GetUrl() != "c:1" || req.GetLoggingEndpoint().GetUrl() != "l:1" ||
		req.GetArtifactEndpoint().GetUrl() != "a:1" || req.GetProvisionEndpoint().GetUrl() != "p:1" || req.GetParams()["k"] != "v" {
		t.Errorf("StartWorker request %v", req)
	}
	if len(p.stopped) != 1 || p.stopped[0] != "job-w0" {
		t.Errorf("stopped %v, want [job-w0]", p.stopped)
	}
	p.refuse = "no room"
	if _, err := StartOnPool(ctx, addr, "job-w1", ep, nil); err == nil || !strings.Contains(err.Error(), "worker pool "+addr+": no room") {
		t.Errorf("refused start: %v", err)
	}
	lis, _ := net.Listen("tcp", "127.0.0.1:0")
	gone := lis.Addr().String()
	lis.Close()
	if _, err := StartOnPool(ctx, gone, "job-w2", ep, nil); err == nil || !strings.Contains(err.Error(), "StartWorker at "+gone) {
		t.Errorf("pool that does not answer: %v", err)
	}
}
