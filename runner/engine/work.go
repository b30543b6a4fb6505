package engine

import (
	"errors"

	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/runner/stagekind"
)

// Remaining work, for sizing a batch job's workers (docs/scaling.md,
// "Batch"): what each SDK stage has still to run and how many bundles it
// could run at once. The engine knows its queues and the input its
// running bundles still own; the driver adds what their progress says.

// StageWork is one SDK stage's work not yet done.
type StageWork struct {
	// QueuedBytes is input waiting to run: pending (spilled too), waiting
	// for side inputs, filed under keys, and residuals waiting to resume.
	QueuedBytes int64
	// Pieces is how many bundles the queued input could run as at once,
	// at most the limit asked: what cut would make of the pending input
	// with that many free slots, one per key with input, one per
	// residual; the limit while a GroupByKey still holds panes for it.
	Pieces int
	// QueuedElements counts the elements of the pending input, at most
	// the limit (a spilled chunk counts as the limit).
	QueuedElements int
	// Blocked: the queued input cannot start yet, as the stage waits for
	// the rest of its main input or for its side inputs.
	Blocked bool
	// Flight is, per running bundle id, the input it still owns.
	Flight map[int]FlightWork
}

// FlightWork is the input a running bundle still owns after its splits:
// its elements (at most the limit asked) and their bytes.
type FlightWork struct {
	Elements int
	Bytes    int64
}

// errEnough stops a count at its limit.
var errEnough = errors.New("enough")

// Work reports every SDK stage's remaining work by stage id, counting
// elements no further than limit (a count past the most workers an
// environment may have changes nothing).
func (e *Engine) Work(limit int) map[string]StageWork {
	f := e.flow
	out := map[string]StageWork{}
	for _, st := range f.stages {
		if st.spec.Kind != stagekind.SDK || len(st.spec.Inputs) == 0 {
			continue
		}
		wv := f.pcolls[st.spec.Inputs[0]].spec.Codec
		w := StageWork{QueuedBytes: queuedBytes(st), Flight: map[int]FlightWork{}}
		for _, d := range st.delayed {
			w.QueuedBytes += int64(len(d.data))
		}
		w.QueuedElements = countPending(st, wv, limit)
		w.Pieces = min(limit, f.pieces(st, w.QueuedElements)+len(st.delayed)+len(st.waiting))
		w.Blocked = !f.canRun(st) || !f.sidesReady(st)
		if st.keyed != nil {
			w.Pieces = min(limit, w.Pieces+len(st.keyed.pending))
		}
		if f.panesLeft(st) {
			w.Pieces = limit
		}
		for id, b := range st.flight {
			w.Flight[id] = flightWork(b, wv, limit)
		}
		out[st.spec.ID] = w
	}
	return out
}

// countPending counts the elements of st's pending input up to limit; a
// spilled chunk counts as the limit.
func countPending(st *stage, wv *coders.WindowedValueCodec, limit int) int {
	n := 0
	for _, c := range st.pending {
		if n >= limit {
			break
		}
		if c.data == nil && c.size > 0 {
			return limit
		}
		_ = coders.Each([][]byte{c.data}, wv, func(*coders.WindowedValue) error {
			if n++; n >= limit {
				return errEnough
			}
			return nil
		})
	}
	return min(n, limit)
}

// pieces is how many bundles cut would make of st's n pending elements
// with as many free slots: one per element, fewer when MinBundleBytes
// keeps small inputs together.
func (f *flow) pieces(st *stage, n int) int {
	if m := f.spec.MinBundleBytes; m > 0 && n > 0 {
		n = min(n, max(1, pendingBytes(st)/m))
	}
	return n
}

// panesLeft reports whether a GroupByKey upstream of st's main input still
// holds panes it has not handed out.
func (f *flow) panesLeft(st *stage) bool {
	g := f.pcolls[st.spec.Inputs[0]].fromGBK
	return g != nil && g.gbk != nil && g.gbk.Due()
}

// flightWork is the input bundle b still owns: the elements before its
// last split's residual (all of them before any split).
func flightWork(b *bundle, wv *coders.WindowedValueCodec, limit int) FlightWork {
	w := FlightWork{}
	owned := b.split.owned
	if owned < 0 {
		for _, c := range b.Input {
			w.Bytes += int64(len(c))
		}
	}
	for _, c := range b.Input {
		err := coders.EachRaw(c, wv, func(_ *coders.WindowedValue, raw []byte) error {
			if owned >= 0 {
				if w.Elements >= owned {
					return errEnough
				}
				w.Bytes += int64(len(raw))
			} else if w.Elements >= limit {
				return errEnough
			}
			w.Elements++
			return nil
		})
		if err != nil {
			break
		}
	}
	w.Elements = min(w.Elements, limit)
	return w
}
