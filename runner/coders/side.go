package coders

import "fmt"

// Side-input access patterns that IndexSide arranges data for.
const (
	SideIterable = "beam:side_input:iterable:v1"
	SideMultimap = "beam:side_input:multimap:v1"
)

// SideIndex is a materialised side input arranged for state API reads, by
// encoded window.
type SideIndex struct {
	// An iterable side input's elements are spans of the chunks, with no
	// pointer per element: a large side input held as a slice per element
	// cost the collector a lookup per element on every cycle (1M
	// elements: about a second of CPU over a load test).
	chunks [][]byte
	values map[string][]span              // window -> elements
	byKey  map[string]map[string][][]byte // window -> key -> values
	keys   map[string][][]byte            // window -> keys, first-seen order
}

// IndexSide arranges a side input's chunks; key is the KV key coder for
// multimap access, nil for iterable access.
func IndexSide(chunks [][]byte, wv *WindowedValueCodec, key *Codec) (*SideIndex, error) {
	x := &SideIndex{chunks: chunks, values: map[string][]span{}, byKey: map[string]map[string][][]byte{}, keys: map[string][][]byte{}}
	if key == nil {
		return x, x.indexIterable(wv)
	}
	err := Each(chunks, wv, func(v *WindowedValue) error {
		n, err := key.Len(v.Elem)
		if err != nil {
			return fmt.Errorf("multimap side input key: %w", err)
		}
		k, val := v.Elem[:n], v.Elem[n:]
		return EachWindow(wv, v, func(win []byte) error {
			w := string(win)
			m := x.byKey[w]
			if m == nil {
				m = map[string][][]byte{}
				x.byKey[w] = m
			}
			if _, seen := m[string(k)]; !seen {
				x.keys[w] = append(x.keys[w], k)
			}
			m[string(k)] = append(m[string(k)], val)
			return nil
		})
	})
	return x, err
}

// span is one element of chunk c: bytes [off, end).
type span struct{ c, off, end uint32 }

// maxSpan bounds chunk sizes and counts a span can address.
const maxSpan = 1<<32 - 1

func (x *SideIndex) indexIterable(wv *WindowedValueCodec) error {
	var v WindowedValue
	for ci, c := range x.chunks {
		if ci > maxSpan || len(c) > maxSpan {
			return fmt.Errorf("side input chunk %d of %d bytes is too large to index", ci, len(c))
		}
		for off := 0; off < len(c); {
			n, err := wv.Parse(c[off:], &v)
			if err != nil {
				return fmt.Errorf("parsing element at offset %d: %w", off, err)
			}
			// The element ends its windowed value.
			sp := span{uint32(ci), uint32(off + n - len(v.Elem)), uint32(off + n)}
			err = EachWindow(wv, &v, func(win []byte) error {
				x.values[string(win)] = append(x.values[string(win)], sp)
				return nil
			})
			if err != nil {
				return err
			}
			off += n
		}
	}
	return nil
}

func (x *SideIndex) elem(sp span) []byte { return x.chunks[sp.c][sp.off:sp.end:sp.end] }

// Values returns an iterable side input's elements in the encoded window.
func (x *SideIndex) Values(window []byte) [][]byte {
	spans := x.values[string(window)]
	out := make([][]byte, len(spans))
	for i, sp := range spans {
		out[i] = x.elem(sp)
	}
	return out
}

// ValuesPage returns an iterable side input's elements in the encoded
// window from the one numbered from, whole, up to about max bytes (at
// least one), and the number of the next (-1 after the last).
func (x *SideIndex) ValuesPage(window []byte, from, max int) ([]byte, int, error) {
	spans := x.values[string(window)]
	if from < 0 || from > len(spans) {
		return nil, -1, fmt.Errorf("page from element %d of %d", from, len(spans))
	}
	if from < len(spans) && from+1 == len(spans) {
		return x.elem(spans[from]), -1, nil
	}
	size, i := 0, from
	for ; i < len(spans) && (i == from || size+int(spans[i].end-spans[i].off) <= max); i++ {
		size += int(spans[i].end - spans[i].off)
	}
	page := make([]byte, 0, size)
	for _, sp := range spans[from:i] {
		page = append(page, x.elem(sp)...)
	}
	if i == len(spans) {
		return page, -1, nil
	}
	return page, i, nil
}

// ByKey returns a multimap side input's values for the encoded key in the
// encoded window.
func (x *SideIndex) ByKey(window, key []byte) [][]byte { return x.byKey[string(window)][string(key)] }

// Keys returns a multimap side input's keys in the encoded window, in the
// order they were first seen.
func (x *SideIndex) Keys(window []byte) [][]byte { return x.keys[string(window)] }
