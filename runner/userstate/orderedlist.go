package userstate

import (
	"fmt"
	"slices"
	"sort"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"

	"github.com/beam-runner/beam-runner/runner/coders"
)

// entry is one ordered-list element: its sort key and its whole encoded
// bytes (sort key varint included), served back to the SDK unchanged.
type entry struct {
	key  int64
	data []byte
}

// span is a half-open sort-key range [start, end).
type span struct{ start, end int64 }

func (s span) has(k int64) bool { return s.start <= k && k < s.end }

// listDelta is a bundle's pending writes to one ordered list: the ranges it
// cleared from the committed entries, and the entries it added since. Adds
// are never hidden by removed, since a clear also drops the adds it covers.
type listDelta struct {
	removed []span // sorted, disjoint, non-adjacent
	// adds is in insertion order until sortAdds; sorting lazily keeps the
	// Go SDK's one-entry-per-request appends linear rather than quadratic.
	adds   []entry
	sorted bool
}

// parseEntries splits appended data into entries, using the value codec to
// find where each value ends. It fails without partial effect.
func parseEntries(data []byte, value *coders.Codec) ([]entry, error) {
	var out []entry
	for off := 0; off < len(data); {
		k, n, err := coders.Varint(data[off:])
		if err != nil {
			return nil, fmt.Errorf("ordered list entry at byte %d: sort key: %w", off, err)
		}
		m, err := value.Len(data[off+n:])
		if err != nil {
			return nil, fmt.Errorf("ordered list entry at byte %d: value (%s): %w", off, value.URN(), err)
		}
		end := off + n + m
		out = append(out, entry{key: k, data: data[off:end:end]})
		off = end
	}
	return out, nil
}

func (d *listDelta) add(es []entry) {
	d.adds = append(d.adds, es...)
	d.sorted = false
}

// sortAdds orders adds by key; being stable on an insertion-ordered (or
// sorted-then-appended) slice, equal keys stay in insertion order.
func (d *listDelta) sortAdds() {
	if !d.sorted {
		slices.SortStableFunc(d.adds, byKey)
		d.sorted = true
	}
}

// clear removes [start, end) from the bundle's view.
func (d *listDelta) clear(r span) {
	if r.start >= r.end {
		return
	}
	d.adds = slices.DeleteFunc(d.adds, func(e entry) bool { return r.has(e.key) })
	d.removed = addSpan(d.removed, r)
}

// view returns the entries in r as the bundle sees them: surviving
// committed entries first among equal keys, since they were added earlier.
func (d *listDelta) view(committed []entry, r span) [][]byte {
	base := inRange(committed, r)
	var adds []entry
	if d != nil {
		base = slices.DeleteFunc(slices.Clone(base), d.isRemoved)
		d.sortAdds()
		adds = inRange(d.adds, r)
	}
	merged := mergeEntries(base, adds)
	out := make([][]byte, len(merged))
	for i, e := range merged {
		out[i] = e.data
	}
	return out
}

// apply returns the committed entries after the delta as a new slice (nil
// if empty), leaving the old one intact for readers that hold it.
func (d *listDelta) apply(committed []entry) []entry {
	kept := slices.DeleteFunc(slices.Clone(committed), d.isRemoved)
	d.sortAdds()
	out := mergeEntries(kept, d.adds)
	if len(out) == 0 {
		return nil
	}
	return out
}

func (d *listDelta) isRemoved(e entry) bool {
	i := sort.Search(len(d.removed), func(i int) bool { return d.removed[i].end > e.key })
	return i < len(d.removed) && d.removed[i].has(e.key)
}

// inRange returns the sub-slice of sorted entries with keys in r.
func inRange(es []entry, r span) []entry {
	if r.start >= r.end {
		return nil
	}
	lo := sort.Search(len(es), func(i int) bool { return es[i].key >= r.start })
	hi := sort.Search(len(es), func(i int) bool { return es[i].key >= r.end })
	return es[lo:hi:hi]
}

// mergeEntries merges two sorted runs into a new slice, taking a's entries
// first among equal keys.
func mergeEntries(a, b []entry) []entry {
	if len(b) == 0 {
		return slices.Clip(a)
	}
	out := make([]entry, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if b[0].key < a[0].key {
			out, b = append(out, b[0]), b[1:]
		} else {
			out, a = append(out, a[0]), a[1:]
		}
	}
	return append(append(out, a...), b...)
}

// addSpan inserts r into sorted disjoint spans, coalescing overlaps.
func addSpan(spans []span, r span) []span {
	out := make([]span, 0, len(spans)+1)
	for _, s := range spans {
		switch {
		case s.end < r.start:
			out = append(out, s)
		case r.end < s.start:
			out = append(out, r)
			r = s
		default:
			r = span{min(r.start, s.start), max(r.end, s.end)}
		}
	}
	return append(out, r)
}

func byKey(a, b entry) int {
	switch {
	case a.key < b.key:
		return -1
	case a.key > b.key:
		return 1
	}
	return 0
}

// LengthPrefixedValues is the value codec for ordered lists written by the
// Python SDK, which always length-prefixes the value after the sort key.
func LengthPrefixedValues() *coders.Codec { return lpValues }

var lpValues = func() *coders.Codec {
	c, err := coders.Compile(map[string]*pipepb.Coder{
		"lp":    {Spec: &pipepb.FunctionSpec{Urn: coders.URNLengthPrefix}, ComponentCoderIds: []string{"value"}},
		"value": {Spec: &pipepb.FunctionSpec{Urn: coders.URNBytes}},
	}, "lp")
	if err != nil {
		panic(err) // a constant coder map; cannot fail
	}
	return c
}()
