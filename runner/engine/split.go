package engine

import "sort"

// splitMinAge is how long a bundle runs before the engine considers
// splitting it, and the least time between two splits of one bundle: a
// split is a round trip to the SDK, worth it only for long-running work.
const splitMinAge = 500 // milliseconds

// splitCandidates returns the bundles worth splitting now, oldest first:
// bundles that have run at least splitMinAge while their stage has idle
// capacity and nothing else to run. Each returned bundle is not offered
// again for splitMinAge. Splittable stages split restrictions; other
// stages split their input channel, so a few costly elements (a
// CPU-bound ParDo after a GroupByKey, say) spread over the workers too.
// Keyed stages never split: a key's bundles must not run at once; nor do
// a GroupByKey's merges, whose input and output the GroupByKey keeps.
func (e *Engine) splitCandidates() []int {
	var out []int
	for _, st := range e.flow.stages {
		if st.keyed != nil || st.gbk != nil || len(st.flight) == 0 || len(st.pending) > 0 || st.hasReadyResiduals(e.flow.now) {
			continue
		}
		idle := e.flow.maxBundles(st) - len(st.flight)
		for _, b := range oldestFirst(st.flight) {
			if idle <= 0 {
				break
			}
			if e.flow.now-b.started < splitMinAge || e.flow.now-b.splitAt < splitMinAge {
				continue
			}
			b.splitAt = e.flow.now
			out = append(out, b.ID)
			idle--
		}
	}
	return out
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
