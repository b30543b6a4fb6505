package engine

import (
	"fmt"
	"slices"

	"github.com/beam-runner/beam-runner/runner/coders"
)

// A streaming stage reads its side inputs window by window: an element is
// processed once, for each of its windows, the side input window that
// window maps to is complete: expired, the side input's watermark past
// its end plus its allowed lateness, so no pane can still come to it (a
// side input with a trigger that fires only as the window closes, as
// Wait.on's signal view, has its data only then). Waiting for the whole
// side input instead would hold a stream's elements until the side input
// ends (Java's Wait.on, whose signal is a windowed side input, then
// released nothing before its stream ended). Beam's SDKs map a main input window to the
// side input window that holds its max timestamp (of sliding windows, the
// last to start); the engine waits for the latest-ending side window that
// holds it to expire, which is that window or ends later, so no element
// reads a side window still filling. An element still waiting stays in its
// stage's waiting list, holding the stage's output watermark, and moves
// to pending input once the side inputs' watermarks pass its windows.
// Stateful stages and batch jobs wait for complete side inputs.

// gatesByWindow reports whether st takes elements as their side input
// windows complete rather than once its side inputs are complete.
func (f *flow) gatesByWindow(st *stage) bool {
	return f.spec.Streaming && st.keyed == nil && len(st.spec.SideInputs) > 0
}

// sideWindowExpiry is the watermark at which the latest window of fn
// holding ts expires: its end plus the allowed lateness. ok is false when
// fn's windows are unknown or global, whose side input must be complete.
func sideWindowExpiry(fn SideWindowFn, ts int64) (at int64, ok bool) {
	step := fn.Size
	switch fn.Kind {
	case SideWindowsFixed:
	case SideWindowsSliding:
		step = fn.Period
	default:
		return 0, false
	}
	if step <= 0 || fn.Size <= 0 {
		return 0, false
	}
	m := (ts - fn.Offset) % step
	if m < 0 {
		m += step
	}
	return addSaturating(addSaturating(ts-m, fn.Size), max(fn.Lateness, 0)), true
}

// sideReadyFor reports whether st's side inputs are complete for a main
// input window whose max timestamp is maxTS.
func (f *flow) sideReadyFor(st *stage, maxTS int64) bool {
	for _, pc := range st.spec.SideInputs {
		wm := f.pcolls[pc].wm
		if wm >= coders.MaxTimestamp {
			continue
		}
		at, ok := sideWindowExpiry(st.spec.SideWindows[pc], maxTS)
		if !ok || wm < at {
			return false
		}
	}
	return true
}

// elementReady reports whether every window of v has its side inputs.
// Windows the engine cannot read wait for complete side inputs.
func (f *flow) elementReady(st *stage, in *coders.WindowedValueCodec, v *coders.WindowedValue) (bool, error) {
	kind := in.WindowKind()
	if kind == coders.OtherWindow {
		return false, nil
	}
	ready := true
	err := coders.EachWindow(in, v, func(win []byte) error {
		_, maxTS, err := coders.WindowBounds(kind, win)
		if err != nil {
			return err
		}
		ready = ready && f.sideReadyFor(st, maxTS)
		return nil
	})
	return ready, err
}

// sortBySides parts chunks of st's input into the elements whose side
// input windows are complete and those that wait, a chunk each (empty
// when none). A part holds at its elements' least timestamp, or at its
// chunk's hold where that is lower (a residual's watermark estimate).
func (f *flow) sortBySides(st *stage, chunks []chunk) (ready, waiting chunk, err error) {
	in := f.pcolls[st.spec.Inputs[0]].spec.Codec
	ready.minTS, waiting.minTS = coders.MaxTimestamp, coders.MaxTimestamp
	var v coders.WindowedValue
	for _, c := range chunks {
		r, w := chunk{minTS: coders.MaxTimestamp}, chunk{minTS: coders.MaxTimestamp}
		least := coders.MaxTimestamp
		for off := 0; off < len(c.data); {
			n, err := in.Parse(c.data[off:], &v)
			if err != nil {
				return ready, waiting, fmt.Errorf("parsing element at offset %d: %w", off, err)
			}
			ok, err := f.elementReady(st, in, &v)
			if err != nil {
				return ready, waiting, fmt.Errorf("reading the windows of the element at offset %d: %w", off, err)
			}
			dst := &w
			if ok {
				dst = &r
			}
			dst.data = append(dst.data, c.data[off:off+n]...)
			dst.minTS = min(dst.minTS, v.Timestamp)
			least = min(least, v.Timestamp)
			off += n
		}
		for _, p := range []struct{ from, to *chunk }{{&r, &ready}, {&w, &waiting}} {
			if len(p.from.data) == 0 {
				continue
			}
			if c.minTS < least {
				p.from.minTS = min(p.from.minTS, c.minTS)
			}
			p.to.data = append(p.to.data, p.from.data...)
			p.to.minTS = min(p.to.minTS, p.from.minTS)
		}
	}
	return ready, waiting, nil
}

// holdWaiting keeps back, in st's waiting list, the elements of a
// bundle's taken input whose side input windows are not complete yet,
// returning the rest and their bytes.
func (f *flow) holdWaiting(st *stage, taken []chunk, bytes int) ([]chunk, int, error) {
	ready, waiting, err := f.sortBySides(st, taken)
	if err != nil {
		return nil, 0, err
	}
	if len(waiting.data) > 0 {
		if len(st.waiting) == 0 {
			// Sorted at these watermarks; elements already waiting
			// keep the ones they were sorted at, to be sorted again.
			st.sideWMs = f.sideWatermarks(st)
		}
		st.waiting = append(st.waiting, waiting)
		f.pend.untake(len(waiting.data))
		bytes = max(bytes-len(waiting.data), 0)
	}
	if len(ready.data) == 0 {
		return nil, bytes, nil
	}
	return []chunk{ready}, bytes, nil
}

// releaseWaiting moves to pending input the waiting elements whose side
// input windows completed; it looks again only once a side input's
// watermark moved.
func (f *flow) releaseWaiting(st *stage) {
	if len(st.waiting) == 0 {
		return
	}
	wms := f.sideWatermarks(st)
	if slices.Equal(wms, st.sideWMs) {
		return
	}
	ready, waiting, err := f.sortBySides(st, st.waiting)
	if err != nil {
		f.fail(fmt.Errorf("stage %s: input %s: %w", st.spec.ID, st.spec.Inputs[0], err))
		return
	}
	st.sideWMs, st.waiting = wms, nil
	if len(waiting.data) > 0 {
		st.waiting = []chunk{waiting}
	}
	if len(ready.data) > 0 {
		f.addPending(st, ready)
	}
}

// sideWatermarks are st's side inputs' watermarks, in its order.
func (f *flow) sideWatermarks(st *stage) []int64 {
	out := make([]int64, len(st.spec.SideInputs))
	for i, pc := range st.spec.SideInputs {
		out[i] = f.pcolls[pc].wm
	}
	return out
}
