package workers

import (
	"fmt"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/beam-runner/beam-runner/runner/placement"
)

// Pools joining and leaving while a job runs (placement/members.go has
// the policy): every PoolRefresh the environment's pool hosts are
// resolved again. A pod that joined gets its workers (the pool spec's
// /N) and takes bundles once they connect; one that left has its
// workers drained: running bundles end there, new ones go elsewhere,
// then its workers are stopped. With autoscaling on, later scale-ups go
// to the pool running the fewest, which a new pod is.

// defaultPoolRefresh is how often a job resolves its pools again; a
// HorizontalPodAutoscaler acts every 15 s by default.
const defaultPoolRefresh = 10 * time.Second

// watchPools resolves the pools again every refresh until the job ends.
func (rm *remote) watchPools() {
	every := rm.p.opts.PoolRefresh
	if every < 0 {
		return
	}
	if every == 0 {
		every = defaultPoolRefresh
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			rm.refresh()
		case <-rm.ctx.Done():
			return
		}
	}
}

// refresh resolves the pools once and has the board follow.
func (rm *remote) refresh() {
	var live []string
	rm.ws.mu.Lock()
	b := rm.ws.board
	for p := range b.Pools() {
		if !b.Retired(p) {
			live = append(live, b.PoolName(p))
		}
	}
	rm.ws.mu.Unlock()
	now := placement.Reexpand(rm.specs, live, rm.p.lookup(rm.ctx))
	var names []string
	for _, pl := range now {
		names = append(names, pl.Addr)
	}
	var joined []string
	var left []int
	rm.ws.update(func(b *placement.Board) { joined, left = b.Membership(names) })
	for _, pl := range now {
		for _, name := range joined {
			if pl.Addr == name {
				rm.join(pl)
			}
		}
	}
	for _, p := range left {
		rm.leave(p)
	}
}

// join adds pool pl and starts its workers.
func (rm *remote) join(pl placement.Pool) {
	var p int
	rm.ws.update(func(b *placement.Board) { p = b.AddPool(pl.Addr) })
	rm.mu.Lock()
	if p == len(rm.pools) {
		rm.pools = append(rm.pools, pl)
	} else {
		rm.pools[p] = pl
	}
	rm.mu.Unlock()
	rm.p.log.Info("worker pool joined", "env", rm.envID, "pool", pl.Addr, "workers", pl.Workers)
	rm.p.job.Message(jobpb.JobMessage_JOB_MESSAGE_BASIC,
		fmt.Sprintf("worker pool %s joined environment %q: starting %d workers there", pl.Addr, rm.envID, pl.Workers))
	for range pl.Workers {
		rm.growOn(func(*placement.Board) int { return p })
	}
}

// leave retires pool p: its workers drain, then stop.
func (rm *remote) leave(p int) {
	var slots []int
	var was []placement.State
	rm.ws.update(func(b *placement.Board) { slots, was = b.Retire(p) })
	addr := rm.poolAddr(p)
	rm.p.log.Info("worker pool left", "env", rm.envID, "pool", addr, "draining", len(slots))
	rm.p.job.Message(jobpb.JobMessage_JOB_MESSAGE_BASIC,
		fmt.Sprintf("worker pool %s left environment %q: its %d workers drain, then stop", addr, rm.envID, len(slots)))
	for i, w := range slots {
		switch was[i] {
		case placement.Starting: // its start stops it once it connects
		case placement.Down:
			rm.ws.update(func(b *placement.Board) { b.Stopped(w) })
		default:
			rm.goRun(func() {
				if rm.ws.awaitDrained(rm.ctx, w) {
					rm.stopSlot(w)
					rm.ws.update(func(b *placement.Board) { b.Stopped(w) })
				}
			})
		}
	}
}
