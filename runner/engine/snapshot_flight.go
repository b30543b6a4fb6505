package engine

import (
	"fmt"
	"maps"
	"slices"
)

// SnapshotRequeuingFlight is Snapshot of the consistent point the engine
// would be at if every bundle in flight had not started: what each still
// owns of its input (after splits) is pending again, at the same
// watermark hold, a stateful bundle's input goes back to the front of its
// keys' queues and its timers are set again (unless set anew since). It is
// what a checkpoint must hold when bundles are running: after a crash
// their results are lost, and the restored engine runs their input again,
// so nothing is lost and, as only committed results are in a snapshot,
// nothing is committed twice. The engine itself is not changed.
func (e *Engine) SnapshotRequeuingFlight() ([]byte, error) {
	if e.err != nil || len(e.flight) == 0 {
		return e.Snapshot()
	}
	snap, err := e.snapshot()
	if err != nil {
		return nil, err
	}
	c, err := Restore(e.spec, snap)
	if err != nil {
		return nil, fmt.Errorf("requeuing bundles in flight: %w", err)
	}
	for _, id := range slices.Sorted(maps.Keys(e.flight)) {
		b := e.flight[id]
		if b.combine {
			continue // its accumulators are in the snapshot (uncombined)
		}
		owned, err := e.ownedInput(id)
		if err != nil {
			return nil, fmt.Errorf("requeuing bundle %d: %w", id, err)
		}
		if err := c.requeueBundle(c.stage(b.Stage), b, owned); err != nil {
			return nil, fmt.Errorf("requeuing bundle %d of stage %s: %w", id, b.Stage, err)
		}
	}
	return c.Snapshot()
}

// requeueBundle gives a bundle's input and timers back to its stage.
func (e *Engine) requeueBundle(st *stage, b *bundle, owned [][]byte) error {
	if st.keyed == nil {
		back := make([]chunk, 0, len(owned)+len(st.pending))
		for _, c := range owned {
			back = append(back, chunk{data: c, minTS: b.minTS})
		}
		st.pending = append(back, st.pending...)
		return nil
	}
	// The bundle's keys were busy, so input that arrived for them since
	// queued behind; it goes back behind the bundle's.
	later := st.keyed.pending
	st.keyed.pending = map[string]*keyWork{}
	in := e.pcolls[st.spec.Inputs[0]]
	for _, c := range owned {
		e.fileKeyed(st, in, c)
	}
	for k, w := range later {
		if cur := st.keyed.pending[k]; cur != nil {
			cur.data = append(cur.data, w.data...)
			cur.minTS = min(cur.minTS, w.minTS)
		} else {
			st.keyed.pending[k] = w
		}
	}
	// Delivered timers are set again, unless the same timer was set since.
	set := st.keyed.timers
	st.keyed.timers = map[string]*timer{}
	err := e.setTimers(st, oneChunkEach(b.Timers))
	for id, t := range st.keyed.timers {
		if set[id] == nil {
			set[id] = t
		}
	}
	st.keyed.timers = set
	if err != nil {
		return err
	}
	return e.err
}

func oneChunkEach(m map[TimerStream][]byte) map[TimerStream][][]byte {
	out := make(map[TimerStream][][]byte, len(m))
	for k, v := range m {
		out[k] = [][]byte{v}
	}
	return out
}
