package workers

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/jobs"
	"github.com/beam-runner/beam-runner/runner/placement"
	"github.com/beam-runner/beam-runner/worker"
	"github.com/beam-runner/beam-runner/worker/sdkenv"
	"google.golang.org/protobuf/types/known/structpb"
)

// jobPools are the worker pools a job's environments use: the server's,
// with those the job's worker_pools option names in place of the
// server's for their SDKs.
func jobPools(server placement.Pools, opts *structpb.Struct) (placement.Pools, error) {
	v, ok := jobs.Option(opts, jobs.PoolsOption)
	if !ok || v.GetKind() == nil {
		return server, nil
	}
	var specs []string
	switch k := v.GetKind().(type) {
	case *structpb.Value_StringValue:
		specs = []string{k.StringValue}
	case *structpb.Value_ListValue:
		for _, e := range k.ListValue.GetValues() {
			specs = append(specs, e.GetStringValue())
		}
	default:
		return nil, fmt.Errorf("job option %s: want a string such as python=HOST:PORT/N, got %v", jobs.PoolsOption, v.AsInterface())
	}
	own, err := placement.ParsePools(specs...)
	if err != nil {
		return nil, fmt.Errorf("job option %s: %w", jobs.PoolsOption, err)
	}
	return server.With(own), nil
}

// poolsFor decides whether an environment's workers run on worker pools:
// the pools (one per address of each named host) when they do, none when
// the environment runs as it says. An EXTERNAL environment that asks for
// pools of an SDK that has none is an error.
func (p *Pool) poolsFor(ctx context.Context, envID string, env *pipepb.Environment, all placement.Pools) (string, []placement.Pool, error) {
	sdk, asks, err := worker.PoolTarget(env)
	if err != nil {
		return "", nil, fmt.Errorf("environment %q: %w", envID, err)
	}
	if sdk == "" || (len(all[sdk]) == 0 && !asks) {
		return "", nil, nil
	}
	if len(all[sdk]) == 0 {
		return "", nil, fmt.Errorf("environment %q asks for the server's worker pools of SDK %s (EXTERNAL %s), but none are named: start the server with --worker_pools=%s=HOST:PORT, or give the job --%s", envID, sdk, worker.PoolsEndpoint, sdk, jobs.PoolsOption)
	}
	return sdk, placement.Expand(all[sdk], p.lookup(ctx)), nil
}

// lookup resolves a pool's host (Options.Lookup, by default DNS), within
// a few seconds.
func (p *Pool) lookup(ctx context.Context) func(host string) ([]string, error) {
	look := p.opts.Lookup
	if look == nil {
		look = net.DefaultResolver.LookupHost
	}
	return func(host string) ([]string, error) {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		return look(ctx, host)
	}
}

// startRemote starts environment i's workers on its pools, expanded from
// specs (which a running job resolves again: members.go).
func (p *Pool) startRemote(ctx context.Context, i int, envID, sdk string, specs, pools []placement.Pool, env *pipepb.Environment) error {
	var names []string
	for _, pl := range pools {
		names = append(names, pl.String())
	}
	p.log.Info("environment runs on worker pools", "env", envID, "sdk", sdk, "pools", strings.Join(names, ","))
	rm := newRemote(ctx, p, envID, i, sdk, pools, externalParams(env))
	rm.specs = specs
	p.remotes[envID] = rm // stopped with the job, even if it does not start
	if err := rm.start(); err != nil {
		return err
	}
	p.harnesses[envID] = rm.ws
	return nil
}

// externalParams are an EXTERNAL environment's parameters for its pools.
func externalParams(env *pipepb.Environment) map[string]string {
	e, err := sdkenv.Parse(env)
	if err != nil || e.Kind != sdkenv.External {
		return nil // a bad payload fails the worker's start, saying why
	}
	return e.Params
}

// EnvWorkers is, per started environment, how many workers (slots) its
// bundles run on.
func (p *Pool) EnvWorkers() map[string]int {
	out := map[string]int{}
	for envID, ws := range p.harnesses {
		out[envID] = ws.Workers()
	}
	return out
}

// EnvBundles is, per environment on worker pools, how many bundles its
// stages may run at once: one per worker of its pools, which are sized to
// what their hosts run.
func (p *Pool) EnvBundles() map[string]int {
	out := map[string]int{}
	for envID, rm := range p.remotes {
		out[envID] = rm.slots()
	}
	return out
}
