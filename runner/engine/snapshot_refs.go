package engine

import (
	"fmt"

	"github.com/beam-runner/beam-runner/runner/engine/agg"
	"github.com/beam-runner/beam-runner/runner/internal/wire"
)

// Snapshot is a snapshot taken on the driver (TakeSnapshot) whose spilled
// pending input is referenced, not yet read: Bytes reads it back, from a
// view of the spill as it was when the snapshot was taken, so a
// checkpoint's writer does the reading and the driver never waits on the
// disk for it. The bytes are those SnapshotRequeuingFlight gives at the
// same point: a checkpoint holds its input itself, the spill being
// scratch.
type Snapshot struct {
	data    []byte
	holes   []snapHole
	scan    func(prefix []byte, fn func(key, value []byte) error) error
	release func()
}

// snapHole is where, in a Snapshot's data, a spilled chunk's bytes go.
type snapHole struct {
	at  int
	key []byte
}

// Bytes reads the referenced input back and returns the whole snapshot;
// it lets the view go, so it is called once.
func (s *Snapshot) Bytes() ([]byte, error) {
	defer s.Close()
	if len(s.holes) == 0 {
		return s.data, nil
	}
	var w wire.Writer
	prev := 0
	for _, h := range s.holes {
		w.Raw(s.data[prev:h.at])
		data, err := readSpilled(s.scan, h.key)
		if err != nil {
			return nil, fmt.Errorf("snapshot: %w", err)
		}
		w.Blob(data)
		prev = h.at
	}
	w.Raw(s.data[prev:])
	return w.Bytes(), nil
}

// Close lets the snapshot's view of the spill go, unread; closing twice,
// or after Bytes, is harmless.
func (s *Snapshot) Close() {
	if s.release != nil {
		s.release()
		s.release = nil
	}
}

// snapRefs is how a snapshot writes the spilled chunks of pending input.
// Without one, it reads them back. With final, it leaves a hole for
// each, filled by Snapshot.Bytes; otherwise (the in-memory copy
// SnapshotRequeuingFlight restores, never stored) it writes an empty
// blob and keeps the chunk by its ordinal among the pending chunks
// written, which the copy's restore takes it back by.
type snapRefs struct {
	final bool
	ord   int
	byOrd map[int]chunk
	holes []snapHole
}

// write writes a pending chunk's data, or the reference to it.
func (r *snapRefs) write(w *wire.Writer, pend *pendingSpill, c chunk) error {
	if r != nil {
		defer func() { r.ord++ }()
	}
	switch {
	case c.spillKey == nil:
		w.Blob(c.data)
	case r == nil:
		data, err := pend.load(c, false)
		if err != nil {
			return err
		}
		w.Blob(data)
	case r.final:
		r.holes = append(r.holes, snapHole{at: len(w.Bytes()), key: c.spillKey})
	default:
		w.Blob(nil)
		r.byOrd[r.ord] = chunk{spillKey: c.spillKey, size: c.size}
	}
	return nil
}

// read reads a pending chunk written by write (not final), with its
// reference if it had one.
func (r *snapRefs) read(rd *wire.Reader) chunk {
	data := rd.Blob()
	if r == nil {
		return chunk{data: data}
	}
	defer func() { r.ord++ }()
	if c, ok := r.byOrd[r.ord]; ok {
		return c
	}
	return chunk{data: data}
}

// viewing returns the pending spill's views when the engine has spilled
// pending input and its spill gives views; nil otherwise (the snapshot
// then reads the spill itself).
func (e *Engine) viewing() agg.Viewing {
	p := e.flow.pend
	if p == nil {
		return nil
	}
	v, ok := p.sp.(agg.Viewing)
	if !ok {
		return nil
	}
	for _, st := range e.flow.stages {
		for _, c := range st.pending {
			if c.spillKey != nil {
				return v
			}
		}
		for _, c := range st.waiting {
			if c.spillKey != nil {
				return v
			}
		}
	}
	return nil
}
