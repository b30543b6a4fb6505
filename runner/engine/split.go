package engine

import (
	"cmp"
	"slices"
	"sort"

	"github.com/beam-runner/beam-runner/runner/coders"
)

// splitMinAge is the least time between two splits of one bundle: a split
// is a round trip to the SDK, worth it only for long-running work.
const splitMinAge = 500 // milliseconds

// splitFirstAge is how long a bundle runs before the engine first
// considers splitting it while slots idle. Shorter than splitMinAge: a
// stage that starts from one bundle (a source's one restriction) leaves
// every other core idle until that split, which at 500 ms cost the Go
// ParDo load test a tenth of a core-second per second of its run; a bundle
// done within 100 ms is not worth a round trip.
const splitFirstAge = 100 // milliseconds

// splitCandidates returns the dynamic splits worth requesting now, those
// of the bundles with the most work left first (mostWorkFirst): one a
// slot while the stage has idle capacity and nothing else to run, of
// bundles that have run at least splitMinAge. Each keeps
// dynamicSplitFraction of its remaining work, but the largest keeps less
// when slots are left over (spareKeep). Each returned bundle is not
// offered again for splitMinAge. Splittable stages split restrictions;
// other stages split their input channel, so a few costly elements (a
// CPU-bound ParDo after a GroupByKey, say) spread over the workers too.
// Keyed stages never split: a key's bundles must not run at once; nor do
// a GroupByKey's merges, whose input and output the GroupByKey keeps.
func (e *Engine) splitCandidates() []SplitRequest {
	var out []SplitRequest
	for _, st := range e.flow.stages {
		if st.keyed != nil || st.gbk != nil || st.held() || len(st.flight) == 0 || len(st.spec.Inputs) == 0 || len(st.pending) > 0 || st.hasReadyResiduals(e.flow.now) {
			continue
		}
		idle := e.flow.maxBundles(st) - len(st.flight)
		if idle <= 0 {
			continue
		}
		first := len(out)
		for _, b := range e.mostWorkFirst(st) {
			if idle <= 0 {
				break
			}
			if !b.dueForSplit(e.flow.now) {
				continue
			}
			b.splitAt = e.flow.now
			out = append(out, SplitRequest{Bundle: b.ID, Fraction: dynamicSplitFraction})
			idle--
		}
		if len(out) > first && idle > 0 && !st.spec.Splittable {
			out[first].Fraction = spareKeep(idle)
		}
		for _, r := range out[first:] {
			st.flight[r.Bundle].split.keep = r.Fraction
		}
	}
	return out
}

// dueForSplit is whether the split policy may offer bundle b now: first
// splitFirstAge after it started, then splitMinAge after its last split
// (or a checkpoint, which sets splitAt too).
func (b *bundle) dueForSplit(now int64) bool {
	if b.splitAt == b.started {
		return now-b.started >= splitFirstAge
	}
	return now-b.splitAt >= splitMinAge
}

// spareKeep is what the largest bundle split keeps of its remaining work
// when slots are still idle after one went to each bundle split:
// 1/(spare+2), its share with its residual's slot and the spare ones.
// The residual usually makes one bundle (MinBundleBytes), which a later
// split halves: halving at once would leave shares of 1/4, 1/4 and 1/2
// rather than thirds. Not for splittable stages: workLeft counts
// restrictions, so it could not tell the large residual restriction from
// the small one kept.
func spareKeep(spare int) float64 { return 1 / float64(spare+2) }

// mostWorkFirst orders a stage's running bundles for splitting: the one
// with the most work left first, so an idle slot takes half of the
// largest (oldest first took a small old bundle's rest again and again
// while a large newer one ran alone). Equal ones go oldest first.
func (e *Engine) mostWorkFirst(st *stage) []*bundle {
	type sized struct {
		b    *bundle
		left int
	}
	wv := e.flow.pcolls[st.spec.Inputs[0]].spec.Codec
	bs := make([]sized, 0, len(st.flight))
	for _, b := range st.flight {
		bs = append(bs, sized{b, b.workLeft(st.spec.Splittable, wv)})
	}
	slices.SortFunc(bs, func(x, y sized) int {
		return cmp.Or(cmp.Compare(y.left, x.left), cmp.Compare(x.b.ID, y.b.ID))
	})
	out := make([]*bundle, len(bs))
	for i, s := range bs {
		out[i] = s.b
	}
	return out
}

// workLeft estimates the work a bundle has left by the input it still
// owns after its splits, from where its last split found it (readBefore):
// the engine learns no progress, so what it read since counts too, and a
// split that did not say what it gave up leaves the estimate as it was.
// The measure is bytes (an element's
// cost grows with its size: a grouped key's values), but elements for a
// splittable stage: a restriction's bytes say nothing of the work it
// covers, and a bundle keeps part of the one it split, so bundles of one
// restriction each weigh the same and go oldest first.
func (b *bundle) workLeft(splittable bool, wv *coders.WindowedValueCodec) int {
	switch {
	case splittable && b.split.owned >= 0:
		return b.split.owned
	case splittable:
		n := 0
		_ = coders.Each(b.Input, wv, func(*coders.WindowedValue) error { n++; return nil })
		return n // a malformed input fails its bundle, not the policy
	case b.split.owned >= 0:
		return b.split.left
	}
	n := 0
	for _, c := range b.Input {
		n += len(c)
	}
	return n
}

func oldestFirst(m map[int]*bundle) []*bundle {
	bs := make([]*bundle, 0, len(m))
	for _, b := range m {
		bs = append(bs, b)
	}
	sort.Slice(bs, func(i, j int) bool { return bs[i].ID < bs[j].ID })
	return bs
}

func (st *stage) hasReadyResiduals(now int64) bool {
	for _, d := range st.delayed {
		if d.readyAt <= now {
			return true
		}
	}
	return false
}
