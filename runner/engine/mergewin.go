package engine

import (
	"fmt"

	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/runner/engine/agg"
)

// A GroupByKey over a custom merging WindowFn has a merge stage: an SDK
// stage running the WindowFn's beam:transform:merge_windows:v1 on
// KV<nonce, iterable<window>> and answering KV<nonce, KV<iterable<window>
// unmerged, iterable<KV<window merged, iterable<window> originals>>>>. The
// engine feeds it the GBK's merge requests (the key is the nonce) and routes
// its answers back to the GBK. Its input PCollection has no producer and is
// complete from the start, so a batch job runs merges as soon as asked.

// requestWindowMerges sends a merge GBK's waiting windows to its merge stage: in a
// streaming job as soon as they arrive, in a batch job once the GBK's input
// is complete, so a batch merges in one bundle.
func (f *flow) requestWindowMerges(st *stage) {
	if st.spec.WindowMergeStage == "" || !st.gbk.WindowMergesWaiting() {
		return
	}
	if !f.spec.Streaming && st.inWM < coders.MaxTimestamp {
		return
	}
	ms := f.stage(st.spec.WindowMergeStage)
	in := f.pcolls[ms.spec.Inputs[0]]
	var c []byte
	for _, r := range st.gbk.TakeWindowMergeRequests() {
		elem := coders.AppendLengthPrefixed(nil, r.Key)
		elem = coders.AppendIterableHeader(elem, int32(len(r.Windows)))
		for _, w := range r.Windows {
			elem = append(elem, w...)
		}
		c = coders.AppendWindowedValue(c, coders.MinTimestamp, 1, nil, coders.NoFiringPane, elem)
	}
	f.enqueue(ms, in, c)
}

// applyWindowMerges hands a merge stage's answers to its GBK and emits what the
// merged windows fire.
func (f *flow) applyWindowMerges(st *stage, p *pcoll, c []byte) {
	var results []agg.WindowMergeResult
	win, merge, err := windowMergeCodecs(p.spec.Codec.Elem)
	if err == nil {
		err = coders.Each([][]byte{c}, p.spec.Codec, func(v *coders.WindowedValue) error {
			r, err := parseWindowMergeResult(v.Elem, win, merge)
			results = append(results, r)
			return err
		})
	}
	if err == nil {
		err = st.gbk.ApplyWindowMerges(results)
	}
	if err != nil {
		f.fail(fmt.Errorf("stage %s: merging windows: %w", st.spec.ID, err))
		return
	}
	f.emitPanes(st)
	f.requestWindowMerges(st)
}

// parseWindowMergeResult reads one answer of merge_windows. The unmerged
// windows need nothing: they stay as they are.
func parseWindowMergeResult(b []byte, win, merge *coders.Codec) (agg.WindowMergeResult, error) {
	key, n, err := coders.LengthPrefixed(b)
	if err != nil {
		return agg.WindowMergeResult{}, fmt.Errorf("merge result nonce: %w", err)
	}
	r := agg.WindowMergeResult{Key: key}
	b = b[n:]
	skip, err := coders.EachInIterable(b, win, func([]byte) error { return nil })
	if err != nil {
		return r, fmt.Errorf("merge result's unmerged windows: %w", err)
	}
	b = b[skip:]
	_, err = coders.EachInIterable(b, merge, func(kv []byte) error {
		n, err := win.Len(kv)
		if err != nil {
			return err
		}
		m := agg.WindowMerge{Result: kv[:n:n]}
		_, err = coders.EachInIterable(kv[n:], win, func(o []byte) error {
			m.Originals = append(m.Originals, o)
			return nil
		})
		r.Merges = append(r.Merges, m)
		return err
	})
	if err != nil {
		return r, fmt.Errorf("merge result's merges: %w", err)
	}
	return r, nil
}

// windowMergeCodecs finds the window coder and the KV<window,
// iterable<window>> coder in a merge answer's coder.
func windowMergeCodecs(elem *coders.Codec) (win, merge *coders.Codec, err error) {
	merge = elem.Component(1).Component(1).Component(0)
	win = merge.Component(0)
	if win == nil || merge.Component(1) == nil {
		return nil, nil, fmt.Errorf("merge answers' coder %q is not KV<nonce, KV<iterable<window>, iterable<KV<window, iterable<window>>>>>", elem.ID())
	}
	return win, merge, nil
}

// linkWindowMergeStages checks each merge stage and routes its answers to its
// GBK. Its input is complete from the start: nothing but the GBK writes it.
func (f *flow) linkWindowMergeStages() error {
	for _, st := range f.stages {
		if st.spec.WindowMergeStage == "" {
			continue
		}
		ms := f.stage(st.spec.WindowMergeStage)
		if st.gbk == nil || ms == nil || ms.gbk != nil || len(ms.spec.Inputs) != 1 || len(ms.spec.Outputs) != 1 || !st.spec.Agg.SDKWindowMerge {
			return fmt.Errorf("stage %s: merge stage %q must be an SDK stage with one input and one output, for a GroupByKey whose windows the SDK merges", st.spec.ID, st.spec.WindowMergeStage)
		}
		out := f.pcolls[ms.spec.Outputs[0]]
		if out == nil || out.windowMergeFor != nil {
			return fmt.Errorf("stage %s: merge stage %s writes an unknown or shared PCollection %q", st.spec.ID, ms.spec.ID, ms.spec.Outputs[0])
		}
		out.windowMergeFor = st
		f.pcolls[ms.spec.Inputs[0]].wm = coders.MaxTimestamp
	}
	return nil
}
