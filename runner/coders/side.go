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
	values map[string][][]byte            // window -> elements
	byKey  map[string]map[string][][]byte // window -> key -> values
	keys   map[string][][]byte            // window -> keys, first-seen order
}

// IndexSide arranges a side input's chunks; key is the KV key coder for
// multimap access, nil for iterable access.
func IndexSide(chunks [][]byte, wv *WindowedValueCodec, key *Codec) (*SideIndex, error) {
	x := &SideIndex{values: map[string][][]byte{}, byKey: map[string]map[string][][]byte{}, keys: map[string][][]byte{}}
	err := Each(chunks, wv, func(v *WindowedValue) error {
		var k, val []byte
		if key != nil {
			n, err := key.Len(v.Elem)
			if err != nil {
				return fmt.Errorf("multimap side input key: %w", err)
			}
			k, val = v.Elem[:n], v.Elem[n:]
		}
		return EachWindow(wv, v, func(win []byte) error {
			w := string(win)
			if key == nil {
				x.values[w] = append(x.values[w], v.Elem)
				return nil
			}
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

// Values returns an iterable side input's elements in the encoded window.
func (x *SideIndex) Values(window []byte) [][]byte { return x.values[string(window)] }

// ByKey returns a multimap side input's values for the encoded key in the
// encoded window.
func (x *SideIndex) ByKey(window, key []byte) [][]byte { return x.byKey[string(window)][string(key)] }

// Keys returns a multimap side input's keys in the encoded window, in the
// order they were first seen.
func (x *SideIndex) Keys(window []byte) [][]byte { return x.keys[string(window)] }
