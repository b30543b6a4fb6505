package engine

import (
	"fmt"
	"maps"
	"slices"
)

// Rehoming moves a snapshot's state from one pipeline's engine into
// another's (an update of a streaming job: the new pipeline fuses into
// other stages, with other ids). Deciding what goes where, and refusing
// what would be lost, is the caller's (runner/execute's remap); the
// engine only carries it out.
type Rehoming struct {
	// Stages names, per new stage id, the old stage whose state it takes
	// whole: watermarks, pending input, residuals, keyed state, timers
	// and groups. A new stage it does not name starts empty.
	Stages map[string]string
	// Input names, per new stage id, an old stage whose pending input
	// (only) it takes: the same PCollection read by a changed consumer.
	Input map[string]string
	// PColls names, per new PCollection id, the old one whose watermark
	// and kept side-input data it takes.
	PColls map[string]string
	// Transforms renames old transform ids to new ones, for timers.
	Transforms map[string]string
}

// StageHeld is what one stage of a snapshot holds.
type StageHeld struct {
	Input     bool // pending input
	Residuals bool // delayed splittable residuals (a source's position)
	Keyed     bool // keyed input, timers or tracked state windows
	Grouped   bool // a GroupByKey's groups
}

// Held is what a snapshot holds, per stage id and per PCollection id
// (kept side-input data), for deciding what a new plan must keep.
type Held struct {
	Stages map[string]StageHeld
	PColls map[string]bool
}

// SnapshotHeld reads what snapshot snap of an engine for spec holds.
func SnapshotHeld(spec Spec, snap []byte) (Held, error) {
	e, err := restoreUnsettled(spec, snap)
	if err != nil {
		return Held{}, err
	}
	h := Held{Stages: map[string]StageHeld{}, PColls: map[string]bool{}}
	for id, p := range e.flow.pcolls {
		if p.data != nil && len(p.data.Chunks) > 0 {
			h.PColls[id] = true
		}
	}
	for _, st := range e.flow.stages {
		sh := StageHeld{Input: len(st.pending)+len(st.waiting) > 0, Residuals: len(st.delayed) > 0}
		if k := st.keyed; k != nil {
			sh.Keyed = len(k.pending)+len(k.timers)+len(k.windows)+len(k.sorted) > 0
		}
		if st.gbk != nil {
			sh.Grouped = !st.gbk.Done()
		}
		if sh != (StageHeld{}) {
			h.Stages[st.spec.ID] = sh
		}
	}
	return h, nil
}

// Rehome restores snapshot snap of an engine for old into an engine
// for now as m says, and returns that engine's snapshot: what a job of
// the new pipeline restores from. Pure.
func Rehome(old Spec, snap []byte, now Spec, m Rehoming) ([]byte, error) {
	o, err := restoreUnsettled(old, snap)
	if err != nil {
		return nil, err
	}
	n, err := build(now)
	if err != nil {
		return nil, err
	}
	n.flow.now, n.nextID, n.draining = o.flow.now, o.nextID, o.draining
	oldStages := map[string]*stage{}
	for _, st := range o.flow.stages {
		oldStages[st.spec.ID] = st
	}
	newOf := map[string]string{}
	for to, from := range m.Stages {
		newOf[from] = to
	}
	for _, x := range o.flow.expired {
		if to, ok := newOf[x.Stage]; ok {
			x.Stage = to
			n.flow.expired = append(n.flow.expired, x)
		}
	}
	for id, p := range n.flow.pcolls {
		if from, ok := m.PColls[id]; ok && o.flow.pcolls[from] != nil {
			p.wm, p.data = o.flow.pcolls[from].wm, o.flow.pcolls[from].data
		}
	}
	for _, st := range n.flow.stages {
		if from, ok := m.Stages[st.spec.ID]; ok {
			if err := st.takeFrom(oldStages[from], m.Transforms); err != nil {
				return nil, fmt.Errorf("rehoming stage %s into %s: %w", from, st.spec.ID, err)
			}
		} else if from, ok := m.Input[st.spec.ID]; ok && oldStages[from] != nil {
			st.pending = slices.Concat(oldStages[from].pending, oldStages[from].waiting)
		}
	}
	n.flow.recompute()
	if n.flow.err != nil {
		return nil, n.flow.err
	}
	return n.snapshot(nil)
}

// takeFrom gives st the state of old, renaming its timers' transforms.
func (st *stage) takeFrom(old *stage, rename map[string]string) error {
	if old == nil {
		return fmt.Errorf("no such stage in the snapshot")
	}
	if (old.keyed != nil) != (st.keyed != nil) || (old.gbk != nil) != (st.gbk != nil) {
		return fmt.Errorf("the stages differ in kind (keyed %v/%v, grouping %v/%v)", old.keyed != nil, st.keyed != nil, old.gbk != nil, st.gbk != nil)
	}
	st.outWM, st.inWM, st.emitted = old.outWM, old.inWM, old.emitted
	if done := len(old.spec.Events) - len(old.events); done <= len(st.spec.Events) {
		st.events = st.spec.Events[done:]
	}
	st.pending = slices.Concat(old.pending, old.waiting)
	st.delayed = old.delayed
	if old.gbk != nil {
		st.gbk = old.gbk
	}
	if old.keyed != nil {
		return st.keyed.takeFrom(old.keyed, st.spec.ID, rename)
	}
	return nil
}

// takeFrom moves old's keyed state into k, whose stage is stageID.
func (k *keyed) takeFrom(old *keyed, stageID string, rename map[string]string) error {
	k.pending, k.pendingBytes, k.sorted = old.pending, old.pendingBytes, old.sorted
	k.scannedAt, k.rescan, k.ranEarly = old.scannedAt, old.rescan, old.ranEarly
	for id, w := range old.windows {
		w.Stage = stageID
		k.windows[id] = w
	}
	for _, id := range slices.Sorted(maps.Keys(old.timers)) {
		t := *old.timers[id]
		if to, ok := rename[t.stream.Transform]; ok {
			t.stream.Transform = to
		}
		if _, ok := k.cfgTimer(t.stream); !ok {
			return fmt.Errorf("a timer of family %s/%s the new stage does not declare", t.stream.Transform, t.stream.Family)
		}
		// A timer's id starts with its stream (timerID): renamed with it.
		t.id = t.stream.Transform + t.id[len(old.timers[id].stream.Transform):]
		k.timers[t.id] = &t
	}
	return nil
}

func (k *keyed) cfgTimer(s TimerStream) (TimerSpec, bool) {
	for _, ts := range k.cfg.timers {
		if ts.Stream == s {
			return ts, true
		}
	}
	return TimerSpec{}, false
}
