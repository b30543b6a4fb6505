package workers

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/beam-runner/beam-runner/fnapi"
	"github.com/beam-runner/beam-runner/harness"
	"github.com/beam-runner/beam-runner/runner/placement"
	"github.com/beam-runner/beam-runner/worker"
)

// poolStartTimeout bounds one StartWorker call: a pool that takes longer
// is treated as not answering (a lost host can hold a call open).
const poolStartTimeout = 15 * time.Second

// reviveMax is the longest wait between two probes of a pool that is down.
const reviveMax = 15 * time.Second

// remote runs one environment's workers on the worker pools of its SDK:
// as many on each pool as its host runs, a lost one restarted on its pool,
// a pool that stops answering (or whose worker never connects) marked
// down, and its workers started again once it answers. Which worker runs
// a bundle, and when none can, is the board's policy (placement.Board).
type remote struct {
	p      *Pool
	envID  string
	envIdx int
	specs  []placement.Pool // as named, before Expand: members.go resolves them again
	poolOf []int            // slot -> pool index
	params map[string]string
	ws     *Set
	ctx    context.Context // the job's; cancelled by stop
	cancel context.CancelFunc
	wg     sync.WaitGroup // goroutines starting workers and probing pools

	mu      sync.Mutex
	pools   []placement.Pool // by the board's pool index; grows as pools join
	ids     []string         // slot -> its current worker's id
	starts  []int            // slot -> workers started there so far
	busy    []bool           // slot -> a start is under way
	handles map[string]worker.Handle
	poolIDs map[string]int // every worker id started -> its pool, for errors
}

func newRemote(ctx context.Context, p *Pool, envID string, envIdx int, sdk string, pools []placement.Pool, params map[string]string) *remote {
	var names []string
	var counts, poolOf []int
	for i, pl := range pools {
		names, counts = append(names, pl.Addr), append(counts, pl.Workers)
		for k := 0; k < pl.Workers; k++ {
			poolOf = append(poolOf, i)
		}
	}
	rm := &remote{p: p, envID: envID, envIdx: envIdx, pools: pools, poolOf: poolOf, params: params,
		ws:      newBoardSet(sdk, placement.NewBoard(names, counts)),
		handles: map[string]worker.Handle{}, poolIDs: map[string]int{}}
	rm.ctx, rm.cancel = context.WithCancel(ctx)
	rm.ids, rm.starts, rm.busy = make([]string, len(poolOf)), make([]int, len(poolOf)), make([]bool, len(poolOf))
	return rm
}

// start starts every slot's worker and returns once one is up, the rest
// joining as they connect, so that a host slow to answer does not hold up
// the job; it fails, naming the pools, when every one is down.
func (rm *remote) start() error {
	for w := range rm.poolOf {
		rm.goRun(func() { rm.bringUp(w) })
	}
	for {
		rm.ws.mu.Lock()
		up, starting := false, false
		for w := range rm.poolOf {
			switch rm.ws.board.State(w) {
			case placement.Up:
				up = true
			case placement.Starting:
				starting = true
			}
		}
		changed := rm.ws.changed
		rm.ws.mu.Unlock()
		switch {
		case up:
			rm.goRun(rm.watchPools)
			return nil
		case !starting:
			return fmt.Errorf("environment %q: %w", rm.envID, rm.noneLeft())
		}
		select {
		case <-changed:
		case <-rm.ctx.Done():
			return rm.ctx.Err()
		}
	}
}

func (rm *remote) noneLeft() error {
	rm.ws.mu.Lock()
	defer rm.ws.mu.Unlock()
	return rm.ws.board.NoneLeftError(rm.ws.sdk)
}

// bringUp starts a worker for slot w on its pool and, once it connects,
// puts it to work; a failure marks the pool down.
func (rm *remote) bringUp(w int) {
	id, ok := rm.claim(w)
	if !ok {
		return // a start is already under way; it reports
	}
	defer rm.release(w)
	p := rm.poolAt(w)
	fw, err := rm.launch(id, rm.poolAddr(p))
	if err == nil {
		err = rm.attach(w, fw)
	}
	if err != nil {
		rm.down(p, err.Error())
		rm.ws.update(func(b *placement.Board) { // drained while it started
			if b.State(w) == placement.Draining {
				b.Stopped(w)
			}
		})
		return
	}
	var up bool
	rm.ws.update(func(b *placement.Board) { up = b.Connected(w) })
	if !up { // drained while it started
		rm.stopHandle(id)
		rm.ws.update(func(b *placement.Board) { b.Stopped(w) })
		return
	}
	rm.goRun(func() { rm.watch(w, fw) })
}

// claim marks slot w busy and names its next worker: the first as a
// local worker would be named, restarts with -rN.
func (rm *remote) claim(w int) (string, bool) {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	if rm.busy[w] {
		return "", false
	}
	rm.busy[w] = true
	id := workerID(rm.p.job.ID, rm.envIdx, w)
	if rm.starts[w] > 0 {
		id = fmt.Sprintf("%s-r%d", id, rm.starts[w])
	}
	rm.starts[w]++
	rm.ids[w] = id
	rm.poolIDs[id] = rm.poolOf[w]
	return id, true
}

func (rm *remote) release(w int) {
	rm.mu.Lock()
	rm.busy[w] = false
	rm.mu.Unlock()
}

// launch asks the pool at addr for worker id and waits for it to connect.
func (rm *remote) launch(id, addr string) (*fnapi.Worker, error) {
	ep := rm.p.srv.Endpoint()
	fw := rm.p.srv.AddWorker(id)
	rm.p.envOf.set(id, rm.envID)
	ctx, cancel := context.WithTimeout(rm.ctx, poolStartTimeout)
	h, err := worker.StartOnPool(ctx, addr, id, worker.Endpoints{Control: ep, Logging: ep, Artifact: ep, Provision: ep}, rm.params)
	cancel()
	if err != nil {
		return nil, err
	}
	rm.mu.Lock()
	rm.handles[id] = h
	rm.mu.Unlock()
	timer := time.NewTimer(rm.p.opts.StartTimeout)
	defer timer.Stop()
	select {
	case <-fw.Connected():
		rm.p.log.Info("worker connected", "env", rm.envID, "worker", id, "pool", addr)
		return fw, nil
	case <-timer.C:
		rm.goRun(func() { rm.stopHandle(id) }) // it may connect late: it would sit idle
		return nil, fmt.Errorf("worker %s did not connect within %v", id, rm.p.opts.StartTimeout)
	case <-rm.ctx.Done():
		return nil, rm.ctx.Err()
	}
}

// attach gives slot w's harness the new worker, with every descriptor.
func (rm *remote) attach(w int, fw *fnapi.Worker) error {
	rm.ws.mu.Lock()
	h := rm.ws.hs[w]
	rm.ws.mu.Unlock()
	if h != nil {
		return h.Rebind(rm.ctx, fw)
	}
	h = harness.New(fw)
	if err := h.Register(rm.ctx, rm.ws.descriptors()...); err != nil {
		return err
	}
	rm.ws.mu.Lock()
	rm.ws.hs[w] = h
	rm.ws.mu.Unlock()
	return nil
}

// watch hears of the worker's loss as soon as its streams end, whether or
// not it was running a bundle.
func (rm *remote) watch(w int, fw *fnapi.Worker) {
	select {
	case <-fw.Failed():
		rm.lostSlot(w, fw.ID, fw.Err())
	case <-rm.ctx.Done():
	}
}

// lost handles the loss of worker id, which a bundle failing reported.
func (rm *remote) lost(id string) {
	if w, ok := rm.slotOf(id); ok {
		rm.lostSlot(w, id, nil)
	}
}

// slotOf is the slot whose current worker is id.
func (rm *remote) slotOf(id string) (int, bool) {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	for w, cur := range rm.ids {
		if cur == id {
			return w, true
		}
	}
	return -1, false
}

// lostSlot takes slot w's worker id off the board and, unless its pool is
// down, starts another there.
func (rm *remote) lostSlot(w int, id string, cause error) {
	rm.mu.Lock()
	current := rm.ids[w] == id
	rm.mu.Unlock()
	if !current || rm.ctx.Err() != nil {
		return
	}
	var restart bool
	rm.ws.update(func(b *placement.Board) { restart = b.Lost(w) })
	if restart {
		rm.p.log.Warn("worker lost; starting another on its pool", "env", rm.envID, "worker", id, "pool", rm.poolAddr(rm.poolAt(w)), "cause", cause)
		rm.goRun(func() { rm.bringUp(w) })
	}
}

// down marks pool p down and, if it was up, probes it until it answers.
func (rm *remote) down(p int, why string) {
	if rm.ctx.Err() != nil {
		return
	}
	var revive bool
	rm.ws.update(func(b *placement.Board) { revive = b.MarkDown(p, why) })
	if !revive {
		return
	}
	addr := rm.poolAddr(p)
	rm.p.log.Warn("worker pool down", "env", rm.envID, "pool", addr, "why", why)
	rm.p.job.Message(jobpb.JobMessage_JOB_MESSAGE_WARNING,
		fmt.Sprintf("worker pool %s of environment %q is down (%s): its bundles run on the other pools until it answers again", addr, rm.envID, why))
	rm.goRun(func() { rm.revive(p) })
}

// revive probes pool p, less often the longer it stays down, and once it
// answers starts its workers again.
func (rm *remote) revive(p int) {
	addr := rm.poolAddr(p)
	for delay := time.Second; ; delay = min(2*delay, reviveMax) {
		select {
		case <-time.After(delay):
		case <-rm.ctx.Done():
			return
		}
		var retired bool
		rm.ws.update(func(b *placement.Board) { retired = b.Retired(p) })
		if retired {
			return // its host left: nothing to revive
		}
		if probe(rm.ctx, addr) == nil {
			break
		}
	}
	rm.p.log.Info("worker pool answers again", "env", rm.envID, "pool", addr)
	var slots []int
	rm.ws.update(func(b *placement.Board) { slots = b.Revived(p) })
	for _, w := range slots {
		rm.goRun(func() { rm.bringUp(w) })
	}
}

// probe reports whether something accepts connections at addr.
func probe(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	return conn.Close()
}

func (rm *remote) goRun(f func()) {
	rm.wg.Add(1)
	go func() {
		defer rm.wg.Done()
		f()
	}()
}

// poolOfWorker names the pool worker id was started on, for errors.
func (rm *remote) poolOfWorker(id string) (string, bool) {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	p, ok := rm.poolIDs[id]
	if !ok {
		return "", false
	}
	return rm.pools[p].Addr, true
}

// poolAddr is pool p's address.
func (rm *remote) poolAddr(p int) string {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	return rm.pools[p].Addr
}

func (rm *remote) stopHandle(id string) {
	rm.mu.Lock()
	h := rm.handles[id]
	delete(rm.handles, id)
	rm.mu.Unlock()
	if h != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := h.Stop(ctx); err != nil {
			rm.p.log.Debug("stopping worker", "worker", id, "err", err)
		}
	}
}

// stop ends the starts and probes under way, then asks the pools to stop
// every worker started, all at once: a lost pool must not hold up the rest.
func (rm *remote) stop() {
	rm.cancel()
	rm.wg.Wait()
	rm.mu.Lock()
	var ids []string
	for id := range rm.handles {
		ids = append(ids, id)
	}
	rm.mu.Unlock()
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func() { defer wg.Done(); rm.stopHandle(id) }()
	}
	wg.Wait()
}

// poolAt is the pool slot w is on; a scale-up may be growing poolOf.
func (rm *remote) poolAt(w int) int {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	return rm.poolOf[w]
}

// slots is how many slots the environment has had at most.
func (rm *remote) slots() int {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	return len(rm.poolOf)
}

// grow starts one more worker, on the pool running the fewest (a pod
// that joined the pool's Service while the job runs, once a refresh found
// it: members.go).
func (rm *remote) grow() { rm.growOn(func(b *placement.Board) int { return b.LeastActivePool() }) }

// growOn starts one more worker, on the pool pick chooses.
func (rm *remote) growOn(pick func(b *placement.Board) int) {
	w := rm.ws.addSlot(pick)
	if w < 0 {
		rm.p.log.Warn("scale-up: every worker pool of the environment is down", "env", rm.envID)
		return
	}
	rm.ws.mu.Lock()
	p := rm.ws.board.Pool(w)
	rm.ws.mu.Unlock()
	rm.mu.Lock()
	for len(rm.poolOf) <= w {
		rm.poolOf, rm.ids = append(rm.poolOf, 0), append(rm.ids, "")
		rm.starts, rm.busy = append(rm.starts, 0), append(rm.busy, false)
	}
	rm.poolOf[w] = p
	rm.mu.Unlock()
	rm.goRun(func() { rm.bringUp(w) })
}

// stopSlot asks slot w's pool to stop its worker, drained by a scale-down.
func (rm *remote) stopSlot(w int) {
	rm.mu.Lock()
	id := rm.ids[w]
	rm.mu.Unlock()
	rm.stopHandle(id)
	rm.p.log.Info("scale-down: worker drained and stopped", "env", rm.envID, "worker", id)
}
