package placement

// Scaling (issue 36, docs/scaling.md "Autoscaling"): the autoscaler adds
// slots to a board and drains others. A drained slot keeps its index, so
// that the instruction keys of bundles it ran stay unambiguous, and a
// later AddSlot on its pool takes it again.

// Active is how many slots are starting, up or down: the workers the
// environment has or is getting back, draining and gone ones excluded.
func (b *Board) Active() int {
	n := 0
	for _, s := range b.slots {
		if s.state == Starting || s.state == Up || s.state == Down {
			n++
		}
	}
	return n
}

// AddSlot adds a starting slot on pool p (a gone one of p's, else a new
// one) and returns it; the caller starts its worker and calls Connected.
func (b *Board) AddSlot(p int) int {
	for i, s := range b.slots {
		if s.pool == p && s.state == Gone {
			b.slots[i] = slot{pool: p, state: Starting}
			return i
		}
	}
	b.slots = append(b.slots, slot{pool: p, state: Starting})
	return len(b.slots) - 1
}

// LeastActivePool is the pool, of those not down nor retired, with the
// fewest active slots (ties: the lowest), where a new worker goes; -1 if
// there is none.
func (b *Board) LeastActivePool() int {
	per := make([]int, len(b.pools))
	for _, s := range b.slots {
		if s.state == Starting || s.state == Up {
			per[s.pool]++
		}
	}
	best := -1
	for p := range b.pools {
		if !b.pools[p].down && !b.pools[p].retired && (best < 0 || per[p] < per[best]) {
			best = p
		}
	}
	return best
}

// PickDrain chooses the slot to drain next: of the up slots, the one
// running the fewest bundles (ties: the last), so that the drain ends
// soonest and the first workers, which stateful stages' lanes favour,
// stay; -1 if none is up. A starting or down slot is taken first: it
// runs nothing.
func (b *Board) PickDrain() int {
	for i := len(b.slots) - 1; i >= 0; i-- {
		if st := b.slots[i].state; st == Starting || st == Down {
			return i
		}
	}
	best := -1
	for i := len(b.slots) - 1; i >= 0; i-- {
		if b.slots[i].state == Up && (best < 0 || b.slots[i].running < b.slots[best].running) {
			best = i
		}
	}
	return best
}

// Drain stops slot w taking new bundles; it reports the state it was in
// (a starting or down slot runs nothing: the caller stops it at once).
func (b *Board) Drain(w int) State {
	was := b.slots[w].state
	b.slots[w].state = Draining
	return was
}

// Drained reports whether slot w is draining and runs no bundle: its
// worker may be stopped.
func (b *Board) Drained(w int) bool {
	return b.slots[w].state == Draining && b.slots[w].running == 0
}

// Stopped marks a drained slot's worker stopped.
func (b *Board) Stopped(w int) { b.slots[w].state, b.slots[w].running = Gone, 0 }
