// Package placement decides where a job's SDK workers run and which of
// them runs each bundle: the worker pools named for each SDK, and a board
// of their workers that hands a bundle to the least-loaded one and tracks
// which pools are down. It is pure policy, with no I/O: runner/execute
// starts the workers and reports to the board what happened to them.
package placement

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/beam-runner/beam-runner/worker/sdkenv"
)

// Pool is one worker pool: the address it serves Beam's
// BeamFnExternalWorkerPool on, and how many SDK workers its host runs.
type Pool struct {
	Addr    string
	Workers int
}

func (p Pool) String() string {
	if p.Workers == 1 {
		return p.Addr
	}
	return fmt.Sprintf("%s/%d", p.Addr, p.Workers)
}

// Pools are worker pools by SDK ("python", "go", "java").
type Pools map[string][]Pool

// SDKs the pools may be named for: those sdkenv knows.
var SDKs = sdkenv.Names()

// maxWorkers bounds the workers one pool is asked to run.
const maxWorkers = 256

// ParsePools reads pool specs: each "SDK=ADDR[/N],ADDR[/N]..." (several
// may be joined by ";"), ADDR a host:port serving the worker pool and N
// how many workers its host can run (default 1). A later spec for an SDK
// replaces an earlier one.
func ParsePools(specs ...string) (Pools, error) {
	out := Pools{}
	for _, spec := range specs {
		for _, part := range strings.Split(spec, ";") {
			if part = strings.TrimSpace(part); part == "" {
				continue
			}
			sdk, pools, err := parseSDKPools(part)
			if err != nil {
				return nil, err
			}
			out[sdk] = pools
		}
	}
	return out, nil
}

func parseSDKPools(part string) (string, []Pool, error) {
	sdk, list, ok := strings.Cut(part, "=")
	sdk = strings.TrimSpace(sdk)
	if !ok || !slices.Contains(SDKs, sdk) {
		return "", nil, fmt.Errorf("worker pools %q: want SDK=HOST:PORT[/N],... with SDK one of %s", part, strings.Join(SDKs, ", "))
	}
	var pools []Pool
	seen := map[string]bool{}
	for _, item := range strings.Split(list, ",") {
		p, err := parsePool(strings.TrimSpace(item))
		if err != nil {
			return "", nil, fmt.Errorf("worker pools of %s: %w", sdk, err)
		}
		if seen[p.Addr] {
			return "", nil, fmt.Errorf("worker pools of %s: %s is named twice", sdk, p.Addr)
		}
		seen[p.Addr] = true
		pools = append(pools, p)
	}
	return sdk, pools, nil
}

func parsePool(item string) (Pool, error) {
	addr, n, hasN := strings.Cut(item, "/")
	p := Pool{Addr: addr, Workers: 1}
	if hasN {
		w, err := strconv.Atoi(n)
		if err != nil || w < 1 || w > maxWorkers {
			return Pool{}, fmt.Errorf("pool %q: the workers after / must be a whole number from 1 to %d", item, maxWorkers)
		}
		p.Workers = w
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return Pool{}, fmt.Errorf("pool %q: want HOST:PORT", item)
	}
	if pn, err := strconv.Atoi(port); err != nil || pn < 1 || pn > 65535 {
		return Pool{}, fmt.Errorf("pool %q: port %q is not a port number", item, port)
	}
	return p, nil
}

// String writes the pools back in ParsePools's form, SDKs in order.
func (ps Pools) String() string {
	var parts []string
	for _, sdk := range SDKs {
		if len(ps[sdk]) == 0 {
			continue
		}
		var items []string
		for _, p := range ps[sdk] {
			items = append(items, p.String())
		}
		parts = append(parts, sdk+"="+strings.Join(items, ","))
	}
	return strings.Join(parts, ";")
}

// With is ps with the SDKs of over replaced by over's pools: a job's own
// pools take the place of the server's for the SDKs it names.
func (ps Pools) With(over Pools) Pools {
	out := Pools{}
	for sdk, p := range ps {
		out[sdk] = p
	}
	for sdk, p := range over {
		out[sdk] = p
	}
	return out
}

// Expand replaces each pool whose host resolves to several addresses by
// one pool per address, each running the pool's workers: a Kubernetes
// headless Service names every pool pod at once. lookup resolves a host;
// a host it cannot resolve, or an IP, stays as named.
func Expand(pools []Pool, lookup func(host string) ([]string, error)) []Pool {
	var out []Pool
	seen := map[string]bool{}
	add := func(p Pool) {
		if !seen[p.Addr] {
			seen[p.Addr] = true
			out = append(out, p)
		}
	}
	for _, p := range pools {
		host, port, _ := net.SplitHostPort(p.Addr)
		addrs, err := lookup(host)
		if net.ParseIP(host) != nil || err != nil || len(addrs) <= 1 {
			add(p)
			continue
		}
		slices.Sort(addrs)
		for _, a := range addrs {
			add(Pool{Addr: net.JoinHostPort(a, port), Workers: p.Workers})
		}
	}
	return out
}
