package engine

import (
	"fmt"

	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/runner/stagekind"
)

// flow is the pipeline's data and watermark bookkeeping: its stages and
// PCollections, where data written to a PCollection goes (deliver), and
// the watermarks that moves (recompute), in processing time now. It sees
// bundles only as each stage's flight, which holds the stage's output
// watermark; the Engine cuts, hands out and tracks them.
type flow struct {
	spec   Spec
	stages []*stage
	pcolls map[string]*pcoll
	now    int64 // processing time
	err    error
	// expired are stateful windows whose state may be dropped.
	expired []StateWindow
	// pend bounds pending input in memory; nil without a limit.
	pend *pendingSpill
}

// deliver routes a chunk of elements written to a PCollection to whatever
// reads it: side-input storage, SDK stages' pending input, GBKs, flattens.
func (f *flow) deliver(pc string, c []byte) {
	p := f.pcolls[pc]
	if p == nil || len(c) == 0 {
		return
	}
	if p.data != nil {
		p.data.Add(c)
	}
	if p.windowMergeFor != nil {
		f.applyWindowMerges(p.windowMergeFor, p, c)
		return
	}
	for _, st := range p.consumers {
		switch st.spec.Kind {
		case stagekind.SDK:
			if st.keyed != nil {
				f.enqueueKeyed(st, p, c)
			} else {
				f.enqueue(st, p, c)
			}
		case stagekind.GBK:
			f.group(st, p, c)
		case stagekind.Flatten:
			f.deliver(st.spec.Outputs[0], c)
		}
	}
}

// enqueueKeyed hands a stateful stage its arriving input.
func (f *flow) enqueueKeyed(st *stage, p *pcoll, c []byte) {
	if p.spec.Key == nil {
		f.fail(fmt.Errorf("stage %s: stateful input %s is not KV-coded", st.spec.ID, p.id))
		return
	}
	if err := st.keyed.add(c, st.inWM); err != nil {
		f.fail(fmt.Errorf("stage %s: input %s: %w", st.spec.ID, p.id, err))
	}
}

// enqueue adds elements to an SDK stage's pending input, noting their
// earliest timestamp, which holds the stage's output watermark.
func (f *flow) enqueue(st *stage, p *pcoll, c []byte) {
	min := coders.MaxTimestamp
	err := coders.Each([][]byte{c}, p.spec.Codec, func(v *coders.WindowedValue) error {
		if v.Timestamp < min {
			min = v.Timestamp
		}
		return nil
	})
	if err != nil {
		f.fail(fmt.Errorf("stage %s: input %s: %w", st.spec.ID, p.id, err))
		return
	}
	f.addPending(st, chunk{data: c, minTS: min})
}

// addPending adds a chunk to an SDK stage's pending input, within the
// pending budget.
func (f *flow) addPending(st *stage, ch chunk) {
	var err error
	if f.pend != nil {
		if ch, err = f.pend.admit(st, ch); err != nil {
			f.fail(fmt.Errorf("stage %s: %w", st.spec.ID, err))
			return
		}
	}
	st.pending = append(st.pending, ch)
}

// group feeds elements to a GBK, one value per window, and emits what fires.
func (f *flow) group(st *stage, p *pcoll, c []byte) {
	if p.spec.Key == nil {
		f.fail(fmt.Errorf("stage %s: input %s is not KV-coded", st.spec.ID, p.id))
		return
	}
	// A batch GroupByKey sees each window's whole input at once: triggers
	// are asked once the input is complete (outputWatermark). A streaming
	// one asks them after each element while what it fired is taken up at
	// once, and once per chunk of input, as Java's ReduceFnRunner does per
	// bundle, while its consumers are still busy (backedUp).
	batch := !f.spec.Streaming || f.backedUp(st)
	if batch {
		st.gbk.BeginInput()
	}
	err := coders.Each([][]byte{c}, p.spec.Codec, func(v *coders.WindowedValue) error {
		kn, err := p.spec.Key.Len(v.Elem)
		if err != nil {
			return fmt.Errorf("decoding key: %w", err)
		}
		key, value := v.Elem[:kn], v.Elem[kn:]
		err = coders.EachWindow(p.spec.Codec, v, func(win []byte) error {
			return st.gbk.AddShared(key, win, value, v.Timestamp, f.now)
		})
		// A combiner tree may start combines within a large chunk.
		f.takeCombines(st)
		return err
	})
	if err != nil {
		f.fail(fmt.Errorf("stage %s: input %s: %w", st.spec.ID, p.id, err))
		return
	}
	if batch && f.spec.Streaming {
		st.gbk.EndInput()
	}
	f.emitPanes(st)
	f.requestWindowMerges(st)
}

// backedUp says a GroupByKey's consumers are still running or have input
// waiting. Firing per element then only makes more, smaller panes for
// them: KafkaIO's exactly-once sink (a count trigger of one) writes a
// Kafka transaction per pane, and at a pane per record it managed 37
// records a second.
func (f *flow) backedUp(st *stage) bool {
	for _, c := range f.pcolls[st.spec.Outputs[0]].consumers {
		if len(c.flight) > 0 || len(c.pending) > 0 {
			return true
		}
	}
	return false
}

// emitPanes writes what a GBK fired to its output.
func (f *flow) emitPanes(st *stage) {
	// Chunks of at most a data-plane frame: bundles are then cut into
	// frames without parsing them.
	out := st.spec.Outputs[0]
	if budget := f.paneBudget(st); budget != 0 {
		st.gbk.FireEncodedUpTo(paneChunkBytes, budget, func(c []byte) { f.deliver(out, c) })
	}
	if err := st.gbk.Err(); err != nil {
		f.fail(fmt.Errorf("stage %s: %w", st.spec.ID, err))
	}
}

// recompute brings every watermark up to date, in topological order, so
// each stage sees its producers' new watermarks in the same pass.
func (f *flow) recompute() {
	for _, st := range f.stages {
		st.inWM = f.inputWatermark(st)
		out := f.outputWatermark(st)
		if out > st.outWM {
			st.outWM = out
		}
		for _, pc := range st.spec.Outputs {
			if p := f.pcolls[pc]; p != nil && st.outWM > p.wm {
				p.wm = st.outWM
			}
		}
		if st.keyed != nil {
			f.expired = append(f.expired, st.keyed.expire(st.inWM)...)
		}
	}
	f.releaseSides()
	f.updateHolds()
}

func (f *flow) inputWatermark(st *stage) int64 {
	wm := coders.MaxTimestamp
	for _, pc := range st.spec.Inputs {
		wm = min(wm, f.pcolls[pc].wm)
	}
	for _, pc := range st.spec.SideInputs {
		wm = min(wm, f.pcolls[pc].wm)
	}
	return wm
}

func (f *flow) outputWatermark(st *stage) int64 {
	switch st.spec.Kind {
	case stagekind.Impulse:
		if !st.emitted {
			st.emitted = true
			f.deliver(st.spec.Outputs[0], Impulse().Chunks[0])
		}
		return coders.MaxTimestamp
	case stagekind.TestStream:
		return st.outWM // moved only by events
	case stagekind.GBK:
		if st.inWM >= coders.MaxTimestamp {
			st.gbk.EndInput()
		}
		st.gbk.AdvanceWatermark(st.inWM)
		f.emitPanes(st)
		f.requestWindowMerges(st)
		return min(st.inWM, st.gbk.Hold())
	case stagekind.Flatten:
		return st.inWM
	}
	wm := st.inWM
	for _, c := range st.pending {
		wm = min(wm, c.minTS)
	}
	for _, c := range st.waiting {
		wm = min(wm, c.minTS)
	}
	for _, b := range st.flight {
		wm = min(wm, b.minTS)
	}
	wm = st.delayedWatermark(wm)
	if len(st.delayed) > 0 && wm >= coders.MaxTimestamp {
		wm = coders.MaxTimestamp - 1 // residuals keep the stage open
	}
	if st.keyed != nil {
		wm = st.keyed.watermark(wm)
	}
	return wm
}

// releaseSides drops side-input data no running stage can read any more.
func (f *flow) releaseSides() {
	for _, p := range f.pcolls {
		if p.data == nil || p.wm < coders.MaxTimestamp {
			continue
		}
		done := true
		for _, st := range p.sides {
			if st.outWM < coders.MaxTimestamp || len(st.flight) > 0 {
				done = false
			}
		}
		if done && len(p.sides) > 0 {
			p.data = &Data{}
		}
	}
}
