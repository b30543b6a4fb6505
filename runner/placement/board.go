package placement

import (
	"fmt"
	"slices"
	"strings"
)

// State is where one worker slot of a board stands.
type State int

const (
	// Starting: a worker is being started (or restarted) on a pool that
	// is not down; bundles may wait for it.
	Starting State = iota
	// Up: the worker is connected and takes bundles.
	Up
	// Down: its pool is down; the slot waits for the pool to answer again.
	Down
	// Draining: the worker takes no new bundles (a scale-down); once its
	// running ones end, the caller stops it (Gone).
	Draining
	// Gone: the slot's worker was stopped by a scale-down; AddSlot may
	// use the slot again.
	Gone
)

func (s State) String() string {
	return [...]string{"starting", "up", "down", "draining", "gone"}[s]
}

// Verdict is what Acquire decided.
type Verdict int

const (
	// Run: the bundle runs on the worker returned.
	Run Verdict = iota
	// Wait: no worker is up, but some are starting; ask again once one
	// of them changes.
	Wait
	// NoneLeft: every pool is down; the bundle cannot run.
	NoneLeft
)

type poolState struct {
	name string
	down bool
	why  string // why it is down
	// retired: its host no longer resolves (members.go); it gets no new
	// slot, and its slots were drained.
	retired bool
}

type slot struct {
	pool    int
	state   State
	running int
}

// Board is the workers of one environment, spread over its pools, and the
// bundles each is running. Its methods are its whole policy: the caller
// serializes calls and carries out the starts and stops they imply.
type Board struct {
	pools []poolState
	slots []slot
}

// NewBoard makes a board of pools named names, with workers[i] slots on
// pool i, every one starting.
func NewBoard(names []string, workers []int) *Board {
	b := &Board{}
	for i, name := range names {
		b.pools = append(b.pools, poolState{name: name})
		for k := 0; k < workers[i]; k++ {
			b.slots = append(b.slots, slot{pool: i})
		}
	}
	return b
}

// Slots is the number of worker slots.
func (b *Board) Slots() int { return len(b.slots) }

// Pool is the pool slot w belongs to.
func (b *Board) Pool(w int) int { return b.slots[w].pool }

// State is slot w's state.
func (b *Board) State(w int) State { return b.slots[w].state }

// PoolDown reports whether pool p is down.
func (b *Board) PoolDown(p int) bool { return b.pools[p].down }

// Acquire picks the worker for a bundle: of the workers that are up, the
// one running the fewest bundles, so a slow or loaded host, whose bundles
// take longer, gets fewer; ties go to the pool running the fewest in all,
// spreading bundles over hosts before doubling up on one, then to the
// lowest slot. The bundle counts as running until Release.
func (b *Board) Acquire() (int, Verdict) { return b.AcquireAvoiding(nil) }

// AcquireAvoiding is Acquire for a bundle that should not run on the
// slots avoid names (its user code failed there), unless no other slot
// is up: it then runs where Acquire would put it rather than wait for
// one, as the other slots may never come up.
func (b *Board) AcquireAvoiding(avoid []int) (int, Verdict) {
	return b.AcquirePreferring(-1, avoid)
}

// AcquirePreferring is AcquireAvoiding for a bundle that asks for slot
// prefer (a stateful stage's key lane; -1: none): it runs there, however
// loaded, while that slot is up and not avoided, and as AcquireAvoiding
// would otherwise rather than wait for it.
func (b *Board) AcquirePreferring(prefer int, avoid []int) (int, Verdict) {
	if prefer >= 0 && prefer < len(b.slots) && b.slots[prefer].state == Up && !slices.Contains(avoid, prefer) {
		b.slots[prefer].running++
		return prefer, Run
	}
	perPool := make([]int, len(b.pools))
	for _, s := range b.slots {
		perPool[s.pool] += s.running
	}
	best, fallback, starting := -1, -1, false
	for i, s := range b.slots {
		switch s.state {
		case Starting:
			starting = true
		case Up:
			if fallback < 0 || less(s, b.slots[fallback], perPool) {
				fallback = i
			}
			if !slices.Contains(avoid, i) && (best < 0 || less(s, b.slots[best], perPool)) {
				best = i
			}
		}
	}
	if best < 0 {
		best = fallback
	}
	switch {
	case best >= 0:
		b.slots[best].running++
		return best, Run
	case starting:
		return -1, Wait
	}
	return -1, NoneLeft
}

func less(a, c slot, perPool []int) bool {
	if a.running != c.running {
		return a.running < c.running
	}
	return perPool[a.pool] < perPool[c.pool]
}

// Release ends a bundle Acquire gave slot w.
func (b *Board) Release(w int) {
	if b.slots[w].running > 0 {
		b.slots[w].running--
	}
}

// Connected marks slot w's worker up. A worker that connects shows its
// pool answers, so the pool is up again too. It reports false, leaving
// the slot as it is, when a scale-down drained the slot meanwhile: the
// caller stops the worker.
func (b *Board) Connected(w int) bool {
	b.pools[b.slots[w].pool].down, b.pools[b.slots[w].pool].why = false, ""
	if st := b.slots[w].state; st == Draining || st == Gone {
		return false
	}
	b.slots[w].state = Up
	return true
}

// Lost marks slot w's worker gone. It reports whether the caller should
// start a new one there now: not when the pool is down (the pool's
// revival starts it) nor when a start is already under way.
func (b *Board) Lost(w int) bool {
	s := &b.slots[w]
	if s.state != Up {
		return false
	}
	if b.pools[s.pool].down {
		s.state = Down
		return false
	}
	s.state = Starting
	return true
}

// MarkDown marks pool p down, saying why (it stopped answering, or a
// worker it started never connected): none of its slots takes bundles
// until it answers again. It reports whether p was up, i.e. whether the
// caller should start reviving it.
func (b *Board) MarkDown(p int, why string) bool {
	was := !b.pools[p].down
	b.pools[p].down, b.pools[p].why = true, why
	for i := range b.slots {
		if st := b.slots[i].state; b.slots[i].pool == p && (st == Starting || st == Down) {
			b.slots[i].state = Down
		}
	}
	return was
}

// Revived marks pool p up again (it answered) and returns its slots that
// need a worker started, now starting.
func (b *Board) Revived(p int) []int {
	b.pools[p].down, b.pools[p].why = false, ""
	var out []int
	for i := range b.slots {
		if b.slots[i].pool == p && b.slots[i].state == Down {
			b.slots[i].state = Starting
			out = append(out, i)
		}
	}
	return out
}

// NoPoolLeft says that every pool of an SDK is down, naming each and why.
type NoPoolLeft struct {
	SDK   string
	Pools []string // "addr (why)"
}

func (e *NoPoolLeft) Error() string {
	return fmt.Sprintf("no worker pool of SDK %s is left: %s", e.SDK, strings.Join(e.Pools, "; "))
}

// NoneLeftError describes the pools when Acquire said NoneLeft.
func (b *Board) NoneLeftError(sdk string) error {
	e := &NoPoolLeft{SDK: sdk}
	for _, p := range b.pools {
		why := p.why
		if why == "" {
			why = "no worker up"
		}
		e.Pools = append(e.Pools, fmt.Sprintf("%s (%s)", p.name, why))
	}
	return e
}

// String shows each slot: its pool, state and running bundles.
func (b *Board) String() string {
	var sb strings.Builder
	for i, p := range b.pools {
		fmt.Fprintf(&sb, "%s", p.name)
		if p.down {
			fmt.Fprintf(&sb, " down (%s)", p.why)
		}
		sb.WriteString(":")
		for w, s := range b.slots {
			if s.pool == i {
				fmt.Fprintf(&sb, " w%d=%s/%d", w, s.state, s.running)
			}
		}
		sb.WriteString("\n")
	}
	return sb.String()
}
