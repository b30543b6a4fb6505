package placement

import (
	"net"
	"slices"
)

// Pools joining and leaving while a job runs (issue 36): a worker pool's
// host name (a headless Service) resolves to its pods, and the runner
// resolves it again as the job runs. An address that appears is a pool
// the board adds; one that no longer resolves is a pod about to go (the
// HorizontalPodAutoscaler or a rollout removing it), so its slots drain,
// as a scale-down's do: its running bundles end there and no new one
// starts, rather than being lost with the pod.

// Membership compares the board's pools with the addresses its hosts
// resolve to now: joined are those the board lacks or retired, left the
// live pools that are no longer among them. An empty now (a name that
// resolves to nothing, for a moment or for good) changes nothing: a job
// keeps the pools it has rather than lose them all.
func (b *Board) Membership(now []string) (joined []string, left []int) {
	if len(now) == 0 {
		return nil, nil
	}
	for _, name := range now {
		if p := b.PoolNamed(name); (p < 0 || b.pools[p].retired) && !slices.Contains(joined, name) {
			joined = append(joined, name)
		}
	}
	for p, ps := range b.pools {
		if !ps.retired && !slices.Contains(now, ps.name) {
			left = append(left, p)
		}
	}
	return joined, left
}

// PoolNamed is the index of the pool named name; -1 if none.
func (b *Board) PoolNamed(name string) int {
	return slices.IndexFunc(b.pools, func(p poolState) bool { return p.name == name })
}

// PoolName is pool p's name.
func (b *Board) PoolName(p int) string { return b.pools[p].name }

// Pools is the number of pools, retired ones included.
func (b *Board) Pools() int { return len(b.pools) }

// AddPool adds a pool named name, with no slots, and returns its index; a
// retired pool of that name serves again (it keeps its index, so that
// the slots it had stay unambiguous).
func (b *Board) AddPool(name string) int {
	if p := b.PoolNamed(name); p >= 0 {
		b.pools[p].retired, b.pools[p].down, b.pools[p].why = false, false, ""
		return p
	}
	b.pools = append(b.pools, poolState{name: name})
	return len(b.pools) - 1
}

// Retired reports whether pool p was retired.
func (b *Board) Retired(p int) bool { return b.pools[p].retired }

// Retire takes pool p out of service: it gets no new slot, and its slots
// that are starting, up or down drain. It returns those slots and the
// state each was in, which tells the caller what to stop (Pool.drain's
// rules: a starting one stops when it connects, a down one runs nothing).
func (b *Board) Retire(p int) (slots []int, was []State) {
	b.pools[p].retired = true
	for w, s := range b.slots {
		if s.pool == p && (s.state == Starting || s.state == Up || s.state == Down) {
			slots, was = append(slots, w), append(was, b.Drain(w))
		}
	}
	return slots, was
}

// Reexpand is Expand again while a job runs, given the names of the pools
// the job has now (live): a host whose lookup fails or finds nothing
// keeps its pools (a DNS hiccup must not drain a job's workers), and a
// host that resolves to one address keeps the form its pool has (its name
// as Expand kept it, or the address), so a refresh that finds what the
// job started with changes nothing.
func Reexpand(specs []Pool, live []string, lookup func(host string) ([]string, error)) []Pool {
	var out []Pool
	add := func(p Pool) {
		if !slices.ContainsFunc(out, func(q Pool) bool { return q.Addr == p.Addr }) {
			out = append(out, p)
		}
	}
	for _, p := range specs {
		host, port, _ := net.SplitHostPort(p.Addr)
		if net.ParseIP(host) != nil {
			add(p)
			continue
		}
		addrs, err := lookup(host)
		switch {
		case err != nil || len(addrs) == 0:
			for _, name := range live {
				if fromSpec(name, p.Addr, port) {
					add(Pool{Addr: name, Workers: p.Workers})
				}
			}
		case len(addrs) == 1 && slices.Contains(live, p.Addr):
			add(p)
		default:
			slices.Sort(addrs)
			for _, a := range addrs {
				add(Pool{Addr: net.JoinHostPort(a, port), Workers: p.Workers})
			}
		}
	}
	return out
}

// fromSpec reports whether a live pool's name may have come from the spec
// spec: the spec's own name, or an address on its port.
func fromSpec(name, spec, port string) bool {
	if name == spec {
		return true
	}
	h, pt, err := net.SplitHostPort(name)
	return err == nil && pt == port && net.ParseIP(h) != nil
}
