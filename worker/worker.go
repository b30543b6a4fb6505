// Package worker starts and stops SDK harnesses for the environments of a
// pipeline: external (LOOPBACK worker pools), process, and docker.
package worker

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"time"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/worker/sdkenv"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Environment URNs the runner can start.
const (
	URNExternal = sdkenv.URNExternal
	URNProcess  = sdkenv.URNProcess
	URNDocker   = sdkenv.URNDocker
	URNAnyOf    = sdkenv.URNAnyOf
)

// Endpoints are the runner's Fn API endpoints handed to a harness.
type Endpoints struct {
	Control, Logging, Artifact, Provision string
}

// Handle stops a started harness.
type Handle interface {
	Stop(ctx context.Context) error
	// Exited is closed if the harness ended on its own (process environments).
	Exited() <-chan struct{}
}

// Supported reports whether the environment URN can be started (for
// anyof: some alternative may be; Launcher.Resolve picks it).
func Supported(urn string) bool { return sdkenv.KindOf(urn) != sdkenv.Unknown }

type external struct {
	conn     *grpc.ClientConn
	workerID string
	exited   chan struct{}
}

func startExternal(ctx context.Context, e sdkenv.Env, workerID string, ep Endpoints) (Handle, error) {
	addr := e.Endpoint
	if addr == "" {
		return nil, fmt.Errorf("external environment has no worker pool endpoint")
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	h, err := StartOnPool(ctx, addr, workerID, ep, e.Params)
	if err != nil {
		return nil, fmt.Errorf("external environment: %w", err)
	}
	return h, nil
}

// StartOnPool asks the worker pool at addr (BeamFnExternalWorkerPool) to
// start a worker that connects as workerID; ctx bounds the request. The
// handle's Stop asks the pool to stop it.
func StartOnPool(ctx context.Context, addr, workerID string, ep Endpoints, params map[string]string) (Handle, error) {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("dialing worker pool %s: %w", addr, err)
	}
	req := &fnpb.StartWorkerRequest{
		WorkerId:          workerID,
		ControlEndpoint:   &pipepb.ApiServiceDescriptor{Url: ep.Control},
		LoggingEndpoint:   &pipepb.ApiServiceDescriptor{Url: ep.Logging},
		ArtifactEndpoint:  &pipepb.ApiServiceDescriptor{Url: ep.Artifact},
		ProvisionEndpoint: &pipepb.ApiServiceDescriptor{Url: ep.Provision},
		Params:            params,
	}
	resp, err := fnpb.NewBeamFnExternalWorkerPoolClient(conn).StartWorker(ctx, req)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("StartWorker at %s: %w", addr, err)
	}
	if resp.GetError() != "" {
		conn.Close()
		return nil, fmt.Errorf("worker pool %s: %s", addr, resp.GetError())
	}
	return &external{conn: conn, workerID: workerID, exited: make(chan struct{})}, nil
}

func (e *external) Exited() <-chan struct{} { return e.exited }

func (e *external) Stop(ctx context.Context) error {
	defer e.conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := fnpb.NewBeamFnExternalWorkerPoolClient(e.conn).StopWorker(ctx, &fnpb.StopWorkerRequest{WorkerId: e.workerID})
	return err
}

// bootArgs are the standard flags every Beam SDK container boot accepts.
func bootArgs(workerID string, ep Endpoints) []string {
	return []string{
		"--id=" + workerID,
		"--provision_endpoint=" + ep.Provision,
		"--logging_endpoint=" + ep.Logging,
		"--artifact_endpoint=" + ep.Artifact,
		"--control_endpoint=" + ep.Control,
	}
}

type process struct {
	cmd    *exec.Cmd
	exited chan struct{}
	once   sync.Once
	out    *tailLines
	exit   string // set before exited is closed
}

// outputLines is how many lines of a harness's output are kept for errors.
const outputLines = 30

func startProcess(e sdkenv.Env, workerID string, ep Endpoints) (Handle, error) {
	if e.Command == "" {
		return nil, fmt.Errorf("process environment has no command")
	}
	cmd := exec.Command(e.Command, bootArgs(workerID, ep)...)
	cmd.Env = os.Environ()
	for k, v := range e.Vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	p, err := runCmd(cmd, "process environment")
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return p, nil
}

// runCmd starts cmd, its output going to the runner's stderr and to a
// tail kept for error messages.
func runCmd(cmd *exec.Cmd, what string) (*process, error) {
	p := &process{cmd: cmd, exited: make(chan struct{}), out: newTail(os.Stderr, outputLines)}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	dieWithServer(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: starting %s: %w", what, cmd.Path, err)
	}
	go func() {
		p.exit = describeExit(cmd.Wait())
		close(p.exited)
	}()
	return p, nil
}

func (p *process) Exited() <-chan struct{} { return p.exited }

// Exit implements Reporter.
func (p *process) Exit() string {
	select {
	case <-p.exited:
		return p.exit
	default:
		return ""
	}
}

// Output implements Reporter.
func (p *process) Output() []string { return p.out.Lines() }

func (p *process) Stop(ctx context.Context) error {
	select {
	case <-p.exited:
		return nil
	default:
	}
	p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
		p.cmd.Process.Kill()
		<-p.exited
	}
	return nil
}
