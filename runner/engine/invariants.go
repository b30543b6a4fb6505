package engine

import (
	"fmt"

	"github.com/beam-runner/beam-runner/runner/coders"
)

// Invariant checks, in Pebble's manner: under the invariants build tag the
// engine checks its own bookkeeping after each driver call that changes
// it, and panics when it is inconsistent. A violation is a bug in the
// engine, never bad input (input errors are the errors the calls return),
// so it stops the test at the call that broke it rather than at a stall
// or a wrong result far later. Without the tag the checks compile to
// nothing (invariants is a false constant).

// invariantState is what the checks remember between calls: the
// watermarks they saw last, which must never go back, and whether a
// bundle was failed (Fail leaves its keys and combines behind, as its
// job is ending).
type invariantState struct {
	stageIn, stageOut, pcoll map[string]int64
	failed                   bool
}

// checkInvariants panics, under the invariants tag, when the engine's
// bookkeeping is inconsistent after the call named by where.
func (e *Engine) checkInvariants(where string) {
	if !invariants || e.flow.err != nil { // a failed engine stops where it failed
		return
	}
	if err := e.invariantErr(); err != nil {
		panic(fmt.Sprintf("engine invariant broken after %s: %v", where, err))
	}
}

func (e *Engine) invariantErr() error {
	if err := e.checkFlight(); err != nil {
		return err
	}
	if err := e.checkPendingBudget(); err != nil {
		return err
	}
	if err := e.checkWatermarks(); err != nil {
		return err
	}
	if e.inv.failed {
		return nil
	}
	for _, st := range e.flow.stages {
		if err := checkOwnership(st); err != nil {
			return fmt.Errorf("stage %s: %w", st.spec.ID, err)
		}
		if err := e.flow.checkCombineHolds(st); err != nil {
			return fmt.Errorf("stage %s: %w", st.spec.ID, err)
		}
	}
	return nil
}

// checkFlight: every bundle in flight is in its stage's flight under its
// own id, and nowhere else; retries are bundles in flight.
func (e *Engine) checkFlight() error {
	n := 0
	for _, st := range e.flow.stages {
		n += len(st.flight)
		for id, b := range st.flight {
			if e.flight[id] != b {
				return fmt.Errorf("bundle %d is in stage %s's flight but not the engine's", id, st.spec.ID)
			}
		}
	}
	if n != len(e.flight) {
		return fmt.Errorf("%d bundles in flight, %d in the stages' flights", len(e.flight), n)
	}
	for id, b := range e.flight {
		st := e.flow.stage(b.Stage)
		switch {
		case b.ID != id || id > e.nextID:
			return fmt.Errorf("bundle %d is in flight as %d (next id %d)", b.ID, id, e.nextID)
		case st == nil || st.flight[id] != b:
			return fmt.Errorf("bundle %d of stage %s is not in that stage's flight", id, b.Stage)
		case b.combine != (st.spec.TreeStage != "" && b.Stage == st.spec.TreeStage):
			return fmt.Errorf("bundle %d of stage %s: combine %v for a stage with tree stage %q", id, b.Stage, b.combine, st.spec.TreeStage)
		}
	}
	for _, b := range e.retries {
		if e.flight[b.ID] != b {
			return fmt.Errorf("bundle %d waits to retry but is not in flight", b.ID)
		}
	}
	return nil
}

// checkPendingBudget: the pending budget's counts are what the pending
// chunks and the bundles in flight hold, and each chunk is either in
// memory or spilled.
func (e *Engine) checkPendingBudget() error {
	p := e.flow.pend
	mem, flight := 0, 0
	for _, st := range e.flow.stages {
		for i, c := range st.pending {
			if c.spillKey != nil && (c.data != nil || c.mem != 0) {
				return fmt.Errorf("stage %s: pending chunk %d is spilled (key %x) yet holds %d bytes in memory, counting %d",
					st.spec.ID, i, c.spillKey, len(c.data), c.mem)
			}
			mem += c.mem
		}
	}
	for _, b := range e.flight {
		flight += b.mem
	}
	if p == nil {
		if mem != 0 || flight != 0 {
			return fmt.Errorf("no pending budget, yet chunks count %d bytes and bundles %d", mem, flight)
		}
		return nil
	}
	if p.mem != mem || p.flight != flight {
		return fmt.Errorf("pending budget counts %d bytes pending and %d in flight; the chunks hold %d, the bundles %d", p.mem, p.flight, mem, flight)
	}
	return nil
}

// checkWatermarks: no stage's input watermark is ahead of its inputs', no
// output watermark ahead of its input watermark or of the PCollections it
// writes, and no watermark went back since the last check.
func (e *Engine) checkWatermarks() error {
	f := e.flow
	for _, st := range f.stages {
		id := st.spec.ID
		if in := f.inputWatermark(st); st.inWM > in {
			return fmt.Errorf("stage %s: input watermark %d ahead of its inputs' %d", id, st.inWM, in)
		}
		if st.outWM > st.inWM {
			return fmt.Errorf("stage %s: output watermark %d ahead of its input watermark %d", id, st.outWM, st.inWM)
		}
		for _, pc := range st.spec.Outputs {
			if p := f.pcolls[pc]; p != nil && p.wm < st.outWM {
				return fmt.Errorf("stage %s: output watermark %d ahead of its output %s's %d", id, st.outWM, pc, p.wm)
			}
		}
		if err := e.inv.monotonic(&e.inv.stageIn, "input watermark of stage", id, st.inWM); err != nil {
			return err
		}
		if err := e.inv.monotonic(&e.inv.stageOut, "output watermark of stage", id, st.outWM); err != nil {
			return err
		}
	}
	for id, p := range f.pcolls {
		if err := e.inv.monotonic(&e.inv.pcoll, "watermark of", id, p.wm); err != nil {
			return err
		}
	}
	return nil
}

// monotonic records the watermark wm of id in seen, failing if it went
// back; what says which watermark it is.
func (s *invariantState) monotonic(seen *map[string]int64, what, id string, wm int64) error {
	if *seen == nil {
		*seen = map[string]int64{}
	}
	if last, ok := (*seen)[id]; ok && wm < last {
		return fmt.Errorf("%s %s went back from %d to %d", what, id, last, wm)
	}
	(*seen)[id] = wm
	return nil
}

// checkOwnership: a stateful stage's busy keys are exactly the keys of
// its bundles in flight, each in one bundle; a GroupByKey's combiner tree
// counts in flight the combines queued or running.
func checkOwnership(st *stage) error {
	if k := st.keyed; k != nil {
		owner := map[string]int{}
		for id, b := range st.flight {
			for _, key := range b.Keys {
				if other, ok := owner[key]; ok {
					return fmt.Errorf("key %x is in bundles %d and %d", key, other, id)
				}
				owner[key] = id
				if !k.busy[key] {
					return fmt.Errorf("key %x of bundle %d in flight is not busy", key, id)
				}
			}
		}
		if len(owner) != len(k.busy) {
			return fmt.Errorf("%d keys busy, %d in bundles in flight", len(k.busy), len(owner))
		}
	}
	if st.gbk != nil && st.spec.TreeStage != "" {
		n := len(st.combines)
		for _, b := range st.flight {
			if b.combine {
				n++
			}
		}
		if got := st.gbk.CombinesInFlight(); got != n {
			return fmt.Errorf("the combiner tree has %d combines out; %d are queued or running", got, n)
		}
	}
	return nil
}

// checkCombineHolds: no GroupByKey's output watermark passed a window
// that waits for a combine, queued or running. A tree only combines
// windows its input watermark has not passed, and such a window neither
// fires nor lets go of its hold until the combine is back (agg/tree.go).
// (Holds of pending input and residuals may be behind the output
// watermark: late data, and the watermarks SDKs report for residuals.)
func (f *flow) checkCombineHolds(st *stage) error {
	if st.gbk == nil || st.spec.TreeStage == "" {
		return nil
	}
	inputs := make([][][]byte, 0, len(st.combines))
	for _, c := range st.combines {
		inputs = append(inputs, c.Input)
	}
	for _, b := range st.flight {
		if b.combine {
			inputs = append(inputs, b.Input)
		}
	}
	grouped := f.pcolls[st.spec.Outputs[0]].spec.Codec
	for _, in := range inputs {
		err := coders.Each(in, grouped, func(v *coders.WindowedValue) error {
			win, _, err := grouped.NextWindow(v.Windows)
			if err != nil {
				return fmt.Errorf("reading a combine's input: %w", err)
			}
			if _, maxTS, err := coders.WindowBounds(st.spec.Agg.Window, win); err == nil && maxTS < st.outWM {
				return fmt.Errorf("output watermark %d passed window %x (max timestamp %d), which waits for a combine", st.outWM, win, maxTS)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
