package engine

import (
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/beam-runner/beam-runner/runner/coders"
)

// RequiresTimeSortedInput: a stateful DoFn that asks for it sees each
// key's input in event-time order. As Java's runners do, an element waits
// in its key's sort buffer until the input watermark passes its timestamp
// plus the allowed lateness, when no element of the key that sorts before
// it can arrive any more without being dropped; buffered elements hold
// the stage's output watermark. An element that arrives after that point
// is late and dropped. In batch the watermark reaches the end of time at
// once, so each key's whole input runs sorted in one go.

// sortBuffer is one key's input not yet released, in arrival order.
type sortBuffer struct {
	elems []sortedElem
	minTS int64
	seq   int // arrival counter, so equal timestamps keep arrival order
}

type sortedElem struct {
	ts  int64
	seq int
	raw []byte // one encoded windowed value
}

// sortDeadline is the watermark an element of timestamp ts waits for:
// once the input watermark passes it, the element is released if
// buffered and dropped if it only arrives then.
func sortDeadline(ts, lateness int64) int64 {
	if lateness > 0 && ts > coders.MaxTimestamp-lateness {
		return coders.MaxTimestamp
	}
	return ts + max(lateness, 0)
}

// sortPassed reports whether the watermark wm passed deadline d; at the
// end of time every deadline has passed.
func sortPassed(d, wm int64) bool { return d < wm || wm >= coders.MaxTimestamp }

// add buffers an element.
func (b *sortBuffer) add(ts int64, raw []byte) {
	if len(b.elems) == 0 || ts < b.minTS {
		b.minTS = ts
	}
	b.elems = append(b.elems, sortedElem{ts: ts, seq: b.seq, raw: raw})
	b.seq++
}

// release takes out, in timestamp order (arrival order among equal ones),
// the elements whose deadline the watermark passed.
func (b *sortBuffer) release(wm, lateness int64) []sortedElem {
	if len(b.elems) == 0 || !sortPassed(sortDeadline(b.minTS, lateness), wm) {
		return nil
	}
	var out, kept []sortedElem
	for _, el := range b.elems {
		if sortPassed(sortDeadline(el.ts, lateness), wm) {
			out = append(out, el)
		} else {
			kept = append(kept, el)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ts < out[j].ts })
	b.elems, b.minTS = kept, coders.MaxTimestamp
	for _, el := range kept {
		b.minTS = min(b.minTS, el.ts)
	}
	return out
}

// buffer files arriving elements of a time-sorted stage in their keys'
// sort buffers, dropping late ones: those the input watermark inWM
// passed.
func (k *keyed) buffer(c []byte, inWM int64) error {
	in := k.cfg.in
	return coders.EachRaw(c, in.Codec, func(v *coders.WindowedValue, raw []byte) error {
		if sortPassed(sortDeadline(v.Timestamp, k.cfg.lateness), inWM) {
			return nil // late: a sorted element before it was released already
		}
		kn, err := in.Key.Len(v.Elem)
		if err != nil {
			return fmt.Errorf("decoding key: %w", err)
		}
		key := string(v.Elem[:kn])
		b := k.sorted[key]
		if b == nil {
			b = &sortBuffer{}
			k.sorted[key] = b
		}
		b.add(v.Timestamp, raw)
		return nil
	})
}

// releaseSorted moves the elements whose deadline the input watermark
// inWM passed to their keys' pending input, in order. Released elements
// sort after those released before: anything earlier arriving since was
// late.
func (k *keyed) releaseSorted(inWM int64) error {
	for _, key := range slices.Sorted(maps.Keys(k.sorted)) {
		b := k.sorted[key]
		var data []byte
		for _, el := range b.release(inWM, k.cfg.lateness) {
			data = append(data, el.raw...)
		}
		if len(b.elems) == 0 {
			delete(k.sorted, key)
		}
		if len(data) > 0 {
			if err := k.file(data); err != nil {
				return err
			}
		}
	}
	return nil
}
