package engine

import (
	"fmt"
	"maps"
	"slices"
)

// SnapshotRequeuingFlight is the snapshot (snapshotAtRest) of the
// consistent point the engine
// would be at if every bundle in flight had not started: what each still
// owns of its input (after splits) is pending again, at the same
// watermark hold, a stateful bundle's input goes back to the front of its
// keys' queues and its timers are set again (unless set anew since). It is
// what a checkpoint must hold when bundles are running: after a crash
// their results are lost, and the restored engine runs their input again,
// so nothing is lost and, as only committed results are in a snapshot,
// nothing is committed twice. The engine itself is not changed.
func (e *Engine) SnapshotRequeuingFlight() ([]byte, error) {
	s, err := e.TakeSnapshot()
	if err != nil {
		return nil, err
	}
	return s.Bytes()
}

// TakeSnapshot is SnapshotRequeuingFlight for the driver: it references
// spilled pending input, from a view of the spill (agg.Viewing) taken
// now, for the Snapshot's Bytes to read back off the driver. A spill
// without views is read now, as SnapshotRequeuingFlight does.
func (e *Engine) TakeSnapshot() (*Snapshot, error) {
	var refs, final *snapRefs
	s := &Snapshot{}
	if v := e.viewing(); v != nil {
		scan, release, err := v.View()
		if err != nil {
			return nil, fmt.Errorf("snapshot: a view of the spill: %w", err)
		}
		s.scan, s.release = scan, release
		refs, final = &snapRefs{byOrd: map[int]chunk{}}, &snapRefs{final: true}
	}
	data, err := e.snapshotRequeuing(refs, final)
	if err != nil {
		s.Close()
		return nil, err
	}
	s.data = data
	if final != nil {
		s.holes = final.holes
	}
	return s, nil
}

// snapshotRequeuing writes what SnapshotRequeuingFlight describes; refs
// is how the in-memory copy, and final how the result, write spilled
// pending input (nil: read back).
func (e *Engine) snapshotRequeuing(refs, final *snapRefs) ([]byte, error) {
	if e.flow.err != nil || len(e.flight) == 0 {
		return e.snapshotAtRestRefs(final)
	}
	snap, err := e.snapshot(refs)
	if err != nil {
		return nil, err
	}
	if refs != nil {
		refs.ord = 0 // the restore reads them in the order written
	}
	// Unsettled until the bundles' input is back: settling first would
	// move watermarks past what the input still holds, and a job restored
	// from the snapshot would drop what that input makes as late.
	c, err := restoreRefs(e.flow.spec, snap, refs)
	if err != nil {
		return nil, fmt.Errorf("requeuing bundles in flight: %w", err)
	}
	// The copy spills nothing: numbering spilled chunks afresh, it would
	// write over the engine's own.
	c.flow.pend = nil
	for _, id := range slices.Sorted(maps.Keys(e.flight)) {
		b := e.flight[id]
		if b.combine {
			continue // its accumulators are in the snapshot (uncombined)
		}
		owned, err := e.ownedInput(id)
		if err != nil {
			return nil, fmt.Errorf("requeuing bundle %d: %w", id, err)
		}
		if err := c.requeueBundle(c.flow.stage(b.Stage), b, owned); err != nil {
			return nil, fmt.Errorf("requeuing bundle %d of stage %s: %w", id, b.Stage, err)
		}
		// What its checkpoints gave up is no longer in what it owns.
		if err := c.flow.deferResiduals(c.flow.stage(b.Stage), b.held); err != nil {
			return nil, fmt.Errorf("requeuing bundle %d of stage %s: %w", id, b.Stage, err)
		}
	}
	c.settle()
	return c.snapshotAtRestRefs(final)
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
	if err := st.keyed.requeue(owned, b.Timers); err != nil {
		return fmt.Errorf("stage %s: %w", st.spec.ID, err)
	}
	return e.flow.err
}
