package engine

import (
	"fmt"
	"maps"
	"slices"

	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/runner/engine/agg"
)

// Combine bundles. The GroupByKey of a lifted combine with a combiner tree
// (agg/tree.go) hands out partial groups of accumulators as it fills; the
// engine runs each as ordinary work: a bundle of the stage the spec's
// TreeStage names (the SDK's merge-accumulators transform alone, reading
// the GroupByKey's output coding and writing its input's), owned by the
// GroupByKey stage, so it counts in that stage's flight, retries like any
// bundle, and its results go back into the GroupByKey rather than to a
// PCollection. The GroupByKey's hold covers the accumulators out in a
// combine, and their windows wait for them, so no watermark passes one.

// treeCheckpointBytes bounds the output of a source bundle that feeds a
// combiner tree: the driver holds a bundle's output until it commits, so
// a long-running source would hand the GroupByKey its accumulators all at
// once at its end, as a chunk the tree cannot shrink before it is all in
// memory (Go wordcount over 60 MiB: four source bundles of a minute,
// 1.6 GiB of RSS at their end). A checkpoint commits what the bundle
// produced and its residual runs as a new bundle. (The same wordcount
// peaked at 251-328 MiB of server RSS with 8 MiB, 195-214 MiB with 4.)
const treeCheckpointBytes = 4 << 20

// feedsTree reports whether a stage writes a PCollection a GroupByKey with
// a combiner tree reads.
func (f *flow) feedsTree(st *stage) bool {
	for _, pc := range st.spec.Outputs {
		if p := f.pcolls[pc]; p != nil {
			for _, c := range p.consumers {
				if c.spec.TreeStage != "" {
					return true
				}
			}
		}
	}
	return false
}

// takeCombines queues the combines the GroupByKey's tree calls for now.
func (f *flow) takeCombines(st *stage) {
	if st.spec.TreeStage != "" {
		st.combines = append(st.combines, st.gbk.TakeCombines(paneChunkBytes)...)
	}
}

// readyCombines starts queued combines while the tree stage has room.
func (e *Engine) readyCombines(st *stage) []*bundle {
	var out []*bundle
	for free := e.flow.maxCombines(st) - len(st.flight); free > 0 && len(st.combines) > 0; free-- {
		m := st.combines[0]
		st.combines = st.combines[1:]
		b := e.newBundle(st)
		b.Stage, b.Input = st.spec.TreeStage, m.Input
		b.combine, b.combineID, b.combineGroups = true, m.ID, m.Groups
		out = append(out, b)
	}
	return out
}

// maxCombines is how many combine bundles of a GroupByKey may run at once.
func (f *flow) maxCombines(st *stage) int {
	n := f.spec.MaxBundles
	if m := st.spec.TreeMaxBundles; m > 0 && m < n {
		n = m
	}
	return n
}

// commitCombine puts a combine bundle's results back into its GroupByKey, as
// one accumulator per key and window each, and emits what then fires.
func (f *flow) commitCombine(st *stage, b *bundle, res Result) error {
	if len(res.Residuals) > 0 || len(res.Timers) > 0 {
		return fmt.Errorf("stage %s: combine bundle %d returned residuals or timers, which merging accumulators never makes", b.Stage, b.ID)
	}
	in := f.pcolls[st.spec.Inputs[0]]
	n := 0
	for _, pc := range slices.Sorted(maps.Keys(res.Data)) {
		err := coders.Each(res.Data[pc], in.spec.Codec, func(v *coders.WindowedValue) error {
			kn, err := in.spec.Key.Len(v.Elem)
			if err != nil {
				return fmt.Errorf("decoding key: %w", err)
			}
			return coders.EachWindow(in.spec.Codec, v, func(win []byte) error {
				n++
				return st.gbk.AddCombined(v.Elem[:kn], win, v.Elem[kn:], v.Timestamp)
			})
		})
		if err != nil {
			return fmt.Errorf("stage %s: combined accumulators of bundle %d (%s): %w", b.Stage, b.ID, pc, err)
		}
	}
	// A group combined into nothing would lose its accumulators silently.
	if n != b.combineGroups {
		return fmt.Errorf("stage %s: combine bundle %d returned %d accumulators for %d groups", b.Stage, b.ID, n, b.combineGroups)
	}
	st.gbk.FinishCombine(b.combineID)
	f.emitPanes(st)
	f.takeCombines(st)
	return nil
}

// uncombined lists the accumulators a GroupByKey's combines, queued or in
// flight, hold, for a snapshot to write back into the GroupByKey
// (agg.GBK.SnapshotUncombined): a restored engine combines them again.
func (f *flow) uncombined(st *stage) ([]agg.Uncombined, error) {
	inputs := make([][][]byte, 0, len(st.combines)+len(st.flight))
	for _, m := range st.combines {
		inputs = append(inputs, m.Input)
	}
	for _, b := range oldestFirst(st.flight) {
		if b.combine {
			inputs = append(inputs, b.Input)
		}
	}
	grouped := f.pcolls[st.spec.Outputs[0]].spec.Codec
	var out []agg.Uncombined
	for _, in := range inputs {
		err := coders.Each(in, grouped, func(v *coders.WindowedValue) error {
			return eachGrouped(grouped, v, func(key, win, value []byte) {
				out = append(out, agg.Uncombined{Key: key, Window: win, Value: value, TS: v.Timestamp})
			})
		})
		if err != nil {
			return nil, fmt.Errorf("reading back the input of a combine: %w", err)
		}
	}
	return out, nil
}

// eachGrouped calls f for each value of a GroupByKey output element that
// a combine's input holds: one window, a key and an iterable of values.
func eachGrouped(wv *coders.WindowedValueCodec, v *coders.WindowedValue, f func(key, win, value []byte)) error {
	keyC, iterC := wv.Elem.Component(0), wv.Elem.Component(1)
	if keyC == nil || iterC == nil || iterC.Component(0) == nil {
		return fmt.Errorf("GroupByKey output coder %s is not KV<key, iterable>", wv.Elem.URN())
	}
	win, _, err := wv.NextWindow(v.Windows)
	if err != nil || v.NumWindows != 1 {
		return fmt.Errorf("a combine's element has %d windows (%v), want one", v.NumWindows, err)
	}
	kn, err := keyC.Len(v.Elem)
	if err != nil {
		return fmt.Errorf("decoding key: %w", err)
	}
	rest := v.Elem[kn:]
	count, n, err := coders.IterableHeader(rest)
	if err != nil || count < 0 {
		return fmt.Errorf("a combine's values are not a counted iterable (%d, %v)", count, err)
	}
	rest = rest[n:]
	for ; count > 0; count-- {
		vn, err := iterC.Component(0).Len(rest)
		if err != nil {
			return fmt.Errorf("decoding value: %w", err)
		}
		f(v.Elem[:kn], win, rest[:vn])
		rest = rest[vn:]
	}
	return nil
}
