package engine

import (
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/runner/engine/agg"
	"github.com/beam-runner/beam-runner/runner/internal/wire"
	"github.com/beam-runner/beam-runner/runner/stagekind"
)

// Snapshot format: the magic bytes, then SnapshotVersion as a varint, then
// the fields written below in order (see internal/wire for the encoding).
// Bump SnapshotVersion whenever a field is added, removed or reinterpreted,
// and keep Restore able to read the versions still found in stores.
const (
	snapshotMagic   = "BRENGINE"
	SnapshotVersion = 3
	// Version 1 lacks a keyed stage's timers fired early (keyed.ranEarly);
	// it restores with none. Versions before 3 lack a time-sorted stage's
	// sort buffers (keyed.sorted); they restore with none.
	oldestSnapshotVersion = 1
)

// snapshotAtRest returns the engine's whole state as bytes: processing time,
// watermarks, pending input, delayed residuals and their holds, keyed
// input queues, timers and state windows, GroupByKey state, TestStream
// positions, kept side-input data, expired state windows and the next
// bundle id. Restore with the same Spec gives an engine that behaves the
// same from here on.
//
// It is taken at a consistent point: no bundle in flight (so no key is
// busy and every input is either pending or committed); one with bundles
// in flight is refused, as is one of a failed engine. The driver takes
// SnapshotRequeuingFlight, which is this at such a point. It does not
// change the engine.
func (e *Engine) snapshotAtRest() ([]byte, error) { return e.snapshotAtRestRefs(nil) }

// snapshotAtRestRefs is snapshotAtRest writing spilled pending input as
// refs says.
func (e *Engine) snapshotAtRestRefs(refs *snapRefs) ([]byte, error) {
	if e.flow.err != nil {
		return nil, fmt.Errorf("snapshot of a failed engine: %w", e.flow.err)
	}
	if len(e.flight) > 0 {
		return nil, fmt.Errorf("snapshot needs a consistent point, but bundles %v are in flight (see SnapshotRequeuingFlight)", slices.Sorted(maps.Keys(e.flight)))
	}
	return e.snapshot(refs)
}

// snapshot writes the state, leaving bundles in flight out: their keys
// are not busy and their input is in no queue in the snapshot. Spilled
// pending input is written as refs says (nil: read back).
func (e *Engine) snapshot(refs *snapRefs) ([]byte, error) {
	var w wire.Writer
	w.String(snapshotMagic)
	w.Uint(SnapshotVersion)
	e.snapshotShape(&w)
	w.Int(e.flow.now)
	w.Int(int64(e.nextID))
	w.Bool(e.draining)
	e.snapshotExpired(&w)
	for _, id := range slices.Sorted(maps.Keys(e.flow.pcolls)) {
		p := e.flow.pcolls[id]
		w.Int(p.wm)
		w.Bool(p.data != nil)
		if p.data != nil {
			snapshotChunks(&w, p.data.Chunks)
		}
	}
	for _, st := range e.flow.stages {
		if err := e.snapshotStage(&w, st, refs); err != nil {
			return nil, fmt.Errorf("stage %s: %w", st.spec.ID, err)
		}
	}
	return w.Bytes(), nil
}

// snapshotShape records the stages and PCollections the state belongs to,
// so a snapshot is never restored into a different pipeline.
func (e *Engine) snapshotShape(w *wire.Writer) {
	w.Len(len(e.flow.stages))
	for _, st := range e.flow.stages {
		w.String(st.spec.ID)
		w.Uint(uint64(st.spec.Kind))
		w.Bool(st.keyed != nil)
	}
	ids := slices.Sorted(maps.Keys(e.flow.pcolls))
	w.Len(len(ids))
	for _, id := range ids {
		w.String(id)
	}
}

func (e *Engine) snapshotExpired(w *wire.Writer) {
	w.Len(len(e.flow.expired))
	for _, x := range sortedStateWindows(e.flow.expired) {
		w.String(x.Stage)
		w.Blob(x.Key)
		w.Blob(x.Window)
		w.Int(x.maxTS)
	}
}

// sortedStateWindows returns a sorted copy, so equal states encode equally.
func sortedStateWindows(ws []StateWindow) []StateWindow {
	out := append([]StateWindow(nil), ws...)
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if string(a.Key) != string(b.Key) {
			return string(a.Key) < string(b.Key)
		}
		if string(a.Window) != string(b.Window) {
			return string(a.Window) < string(b.Window)
		}
		return a.Stage < b.Stage
	})
	return out
}

func snapshotChunks(w *wire.Writer, cs [][]byte) {
	w.Len(len(cs))
	for _, c := range cs {
		w.Blob(c)
	}
}

// snapshotStage writes a stage's state; a GroupByKey's merges, queued or
// in flight, go back into it uncombined (combtree.go).
func (e *Engine) snapshotStage(w *wire.Writer, st *stage, refs *snapRefs) error {
	var back []agg.Uncombined
	if st.gbk != nil {
		var err error
		if back, err = e.flow.uncombined(st); err != nil {
			return err
		}
	}
	return st.snapshot(w, e.flow.pend, back, refs)
}

func (st *stage) snapshot(w *wire.Writer, pend *pendingSpill, back []agg.Uncombined, refs *snapRefs) error {
	w.Int(st.outWM)
	w.Int(st.inWM)
	w.Bool(st.emitted)
	w.Num(len(st.spec.Events) - len(st.events))
	// Waiting input is pending input to a restored engine, which sorts
	// it by its side inputs again when it cuts a bundle.
	w.Len(len(st.pending) + len(st.waiting))
	for _, c := range slices.Concat(st.pending, st.waiting) {
		// A snapshot holds its input itself, the spill being scratch:
		// spilled input is read back, now or (refs) by Snapshot.Bytes.
		if err := refs.write(w, pend, c); err != nil {
			return err
		}
		w.Int(c.minTS)
	}
	w.Len(len(st.delayed))
	for _, d := range st.delayed {
		w.Blob(d.data)
		w.Int(d.readyAt)
		w.Int(d.hold)
	}
	if st.keyed != nil {
		st.keyed.snapshot(w)
	}
	if st.gbk != nil {
		return st.gbk.SnapshotUncombined(w, back)
	}
	return nil
}

func (k *keyed) snapshot(w *wire.Writer) {
	keys := slices.Sorted(maps.Keys(k.pending))
	w.Len(len(keys))
	for _, key := range keys {
		w.String(key)
		w.Blob(k.pending[key].data)
		w.Int(k.pending[key].minTS)
	}
	ids := slices.Sorted(maps.Keys(k.timers))
	w.Len(len(ids))
	for _, id := range ids {
		t := k.timers[id]
		w.String(t.stream.Transform)
		w.String(t.stream.Family)
		w.String(t.key)
		w.String(t.id)
		w.Int(t.fire)
		w.Int(t.hold)
		w.Blob(t.enc)
	}
	wins := slices.Sorted(maps.Keys(k.windows))
	w.Len(len(wins))
	for _, id := range wins {
		sw := k.windows[id]
		w.Blob(sw.Key)
		w.Blob(sw.Window)
		w.Int(sw.maxTS)
	}
	w.Int(k.scannedAt)
	w.Bool(k.rescan)
	early := slices.Sorted(maps.Keys(k.ranEarly))
	w.Len(len(early))
	for _, id := range early {
		w.String(id)
	}
	sorted := slices.Sorted(maps.Keys(k.sorted))
	w.Len(len(sorted))
	for _, key := range sorted {
		b := k.sorted[key]
		w.String(key)
		w.Len(len(b.elems))
		for _, el := range b.elems {
			w.Int(el.ts)
			w.Blob(el.raw)
		}
	}
}

// Restore builds an engine for spec in the state a snapshot recorded. The
// spec must describe the same pipeline (stages, kinds, PCollections and
// windowing) the snapshot was taken of; a snapshot of a newer format, of
// another pipeline, or damaged bytes give an error that says which.
// Processing time is the snapshot's; a driver resuming after a crash
// moves it on to its clock with AdvanceProcessingTime.
func Restore(spec Spec, snap []byte) (*Engine, error) {
	e, err := restoreUnsettled(spec, snap)
	if err != nil {
		return nil, err
	}
	e.settle()
	e.checkInvariants("Restore")
	return e, e.flow.err
}

// restoreUnsettled is Restore before settle: its watermarks are the
// snapshot's, not yet recomputed from what it holds.
func restoreUnsettled(spec Spec, snap []byte) (*Engine, error) {
	return restoreRefs(spec, snap, nil)
}

// restoreRefs is restoreUnsettled of a snapshot written with refs (not
// final), whose chunks it takes back as the references they were.
func restoreRefs(spec Spec, snap []byte, refs *snapRefs) (*Engine, error) {
	r := wire.NewReader(snap)
	if m := r.String(); r.Err() != nil || m != snapshotMagic {
		return nil, fmt.Errorf("restore: not an engine snapshot")
	}
	if v := r.Uint(); r.Err() == nil {
		if v > SnapshotVersion {
			return nil, fmt.Errorf("restore: snapshot format version %d is newer than this runner's (%d); use a newer runner", v, SnapshotVersion)
		}
		if v < oldestSnapshotVersion {
			return nil, fmt.Errorf("restore: snapshot format version %d is not supported (this runner reads %d to %d)", v, oldestSnapshotVersion, SnapshotVersion)
		}
		r.Version = v
	}
	e, err := build(spec)
	if err != nil {
		return nil, err
	}
	if err := e.restoreShape(r); err != nil {
		return nil, err
	}
	if err := e.restoreState(r, refs); err != nil {
		return nil, err
	}
	if err := r.Done(); err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	e.flow.restartFlow()
	return e, nil
}

// settle lets a restored engine's combiner trees fire what their merges,
// written back uncombined, held open, and moves the watermarks that
// follows. Whatever holds a watermark must be in place before: once moved,
// a watermark never goes back.
func (e *Engine) settle() {
	trees := false
	for _, st := range e.flow.stages {
		if st.spec.TreeStage != "" {
			e.flow.emitPanes(st)
			trees = true
		}
	}
	if trees {
		e.flow.recompute()
	}
}

func (e *Engine) restoreShape(r *wire.Reader) error {
	n := r.Len()
	if r.Err() == nil && n != len(e.flow.stages) {
		return fmt.Errorf("restore: snapshot has %d stages, the pipeline %d", n, len(e.flow.stages))
	}
	for _, st := range e.flow.stages {
		id, kind, keyed := r.String(), stagekind.Kind(r.Uint()), r.Bool()
		if r.Err() == nil && (id != st.spec.ID || kind != st.spec.Kind || keyed != (st.keyed != nil)) {
			return fmt.Errorf("restore: snapshot has stage %q (kind %d, keyed %v) where the pipeline has %q (kind %d, keyed %v)", id, kind, keyed, st.spec.ID, st.spec.Kind, st.keyed != nil)
		}
	}
	ids := slices.Sorted(maps.Keys(e.flow.pcolls))
	if n := r.Len(); r.Err() == nil && n != len(ids) {
		return fmt.Errorf("restore: snapshot has %d PCollections, the pipeline %d", n, len(ids))
	}
	for _, want := range ids {
		if id := r.String(); r.Err() == nil && id != want {
			return fmt.Errorf("restore: snapshot has PCollection %q where the pipeline has %q", id, want)
		}
	}
	if r.Err() != nil {
		return fmt.Errorf("restore: %w", r.Err())
	}
	return nil
}

func (e *Engine) restoreState(r *wire.Reader, refs *snapRefs) error {
	e.flow.now = r.Int()
	e.nextID = int(r.Int())
	e.draining = r.Bool()
	for n := r.Len(); n > 0 && r.Err() == nil; n-- {
		e.flow.expired = append(e.flow.expired, StateWindow{Stage: r.String(), Key: r.Blob(), Window: r.Blob(), maxTS: r.Int()})
	}
	for _, id := range slices.Sorted(maps.Keys(e.flow.pcolls)) {
		p := e.flow.pcolls[id]
		p.wm = r.Int()
		p.data = nil
		if r.Bool() {
			p.data = &Data{}
			for _, c := range restoreChunks(r) {
				p.data.Add(c)
			}
		}
	}
	if r.Err() != nil {
		return fmt.Errorf("restore: %w", r.Err())
	}
	for _, st := range e.flow.stages {
		if err := st.restore(r, refs); err != nil {
			return fmt.Errorf("restore: stage %s: %w", st.spec.ID, err)
		}
	}
	return nil
}

func restoreChunks(r *wire.Reader) [][]byte {
	var cs [][]byte
	for n := r.Len(); n > 0 && r.Err() == nil; n-- {
		cs = append(cs, r.Blob())
	}
	return cs
}

func (st *stage) restore(r *wire.Reader, refs *snapRefs) error {
	st.outWM, st.inWM = r.Int(), r.Int()
	st.emitted = r.Bool()
	if done := r.Num(); r.Err() == nil {
		if done > len(st.spec.Events) {
			return fmt.Errorf("snapshot applied %d TestStream events, the stage has %d", done, len(st.spec.Events))
		}
		st.events = st.spec.Events[done:]
	}
	for n := r.Len(); n > 0 && r.Err() == nil; n-- {
		c := refs.read(r)
		c.minTS = r.Int()
		st.pending = append(st.pending, c)
	}
	for n := r.Len(); n > 0 && r.Err() == nil; n-- {
		st.delayed = append(st.delayed, delayed{data: r.Blob(), readyAt: r.Int(), hold: r.Int()})
	}
	if st.keyed != nil {
		if err := st.restoreKeyed(r); err != nil {
			return err
		}
	}
	if st.gbk != nil && r.Err() == nil {
		g, err := agg.Restore(st.spec.Agg, r)
		if err != nil {
			return err
		}
		st.gbk = g
	}
	return r.Err()
}

func (st *stage) restoreKeyed(r *wire.Reader) error {
	k := st.keyed
	for n := r.Len(); n > 0 && r.Err() == nil; n-- {
		key := r.String()
		k.pending[key] = &keyWork{data: r.Blob(), minTS: r.Int()}
		k.pendingBytes += int64(len(k.pending[key].data))
	}
	for n := r.Len(); n > 0 && r.Err() == nil; n-- {
		t := &timer{stream: TimerStream{Transform: r.String(), Family: r.String()}, key: r.String(), id: r.String()}
		t.fire, t.hold, t.enc = r.Int(), r.Int(), r.Blob()
		spec, ok := st.timerSpec(t.stream)
		if r.Err() == nil && !ok {
			return fmt.Errorf("snapshot has a timer of family %s/%s the stage does not declare", t.stream.Transform, t.stream.Family)
		}
		t.processing = spec.Processing
		if r.Err() == nil {
			var pt coders.Timer
			if _, err := spec.Codec.Parse(t.enc, &pt); err != nil {
				return fmt.Errorf("snapshot has a malformed timer of family %s/%s: %w", t.stream.Transform, t.stream.Family, err)
			}
			t.windows = string(pt.Windows)
		}
		k.timers[t.id] = t
	}
	for n := r.Len(); n > 0 && r.Err() == nil; n-- {
		sw := &StateWindow{Stage: st.spec.ID, Key: r.Blob(), Window: r.Blob(), maxTS: r.Int()}
		k.windows[string(sw.Key)+"\x00"+string(sw.Window)] = sw
	}
	k.scannedAt, k.rescan = r.Int(), r.Bool()
	if r.Version >= 2 {
		for n := r.Len(); n > 0 && r.Err() == nil; n-- {
			k.ranEarly[r.String()] = true
		}
	}
	if r.Version >= 3 {
		for n := r.Len(); n > 0 && r.Err() == nil; n-- {
			b := &sortBuffer{}
			k.sorted[r.String()] = b
			for m := r.Len(); m > 0 && r.Err() == nil; m-- {
				b.add(r.Int(), r.Blob())
			}
		}
	}
	return r.Err()
}

func (st *stage) timerSpec(s TimerStream) (TimerSpec, bool) {
	for _, ts := range st.spec.Timers {
		if ts.Stream == s {
			return ts, true
		}
	}
	return TimerSpec{}, false
}
