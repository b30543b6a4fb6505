package engine

import (
	"fmt"
	"sync"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	"github.com/beam-runner/beam-runner/runner/coders"
)

// Side-input access patterns.
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

// IndexSide arranges a side input's data; key is the KV key coder for
// multimap access, nil for iterable access.
func IndexSide(d *Data, wv *coders.WindowedValueCodec, key *coders.Codec) (*SideIndex, error) {
	x := &SideIndex{values: map[string][][]byte{}, byKey: map[string]map[string][][]byte{}, keys: map[string][][]byte{}}
	err := Each(d, wv, func(v *coders.WindowedValue) error {
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

// SideRef identifies a side input as the SDK names it in state keys.
type SideRef struct{ Transform, SideInput string }

// SideHandler answers one stage's side-input state requests.
type SideHandler struct {
	mu      sync.Mutex
	indexes map[SideRef]*SideIndex
	build   map[SideRef]func() (*SideIndex, error)
}

// NewSideHandler serves indexes built lazily, once, by the given functions.
func NewSideHandler(build map[SideRef]func() (*SideIndex, error)) *SideHandler {
	return &SideHandler{indexes: map[SideRef]*SideIndex{}, build: build}
}

func (h *SideHandler) index(ref SideRef) (*SideIndex, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if x := h.indexes[ref]; x != nil {
		return x, nil
	}
	b := h.build[ref]
	if b == nil {
		return nil, fmt.Errorf("no side input %q for transform %q", ref.SideInput, ref.Transform)
	}
	x, err := b()
	if err != nil {
		return nil, fmt.Errorf("side input %q of transform %q: %w", ref.SideInput, ref.Transform, err)
	}
	h.indexes[ref] = x
	return x, nil
}

// Get implements stateplane.Handler.
func (h *SideHandler) Get(key *fnpb.StateKey) ([][]byte, error) {
	switch k := key.GetType().(type) {
	case *fnpb.StateKey_IterableSideInput_:
		x, err := h.index(SideRef{k.IterableSideInput.GetTransformId(), k.IterableSideInput.GetSideInputId()})
		if err != nil {
			return nil, err
		}
		return x.values[string(k.IterableSideInput.GetWindow())], nil
	case *fnpb.StateKey_MultimapSideInput_:
		m := k.MultimapSideInput
		x, err := h.index(SideRef{m.GetTransformId(), m.GetSideInputId()})
		if err != nil {
			return nil, err
		}
		return x.byKey[string(m.GetWindow())][string(m.GetKey())], nil
	case *fnpb.StateKey_MultimapKeysSideInput_:
		m := k.MultimapKeysSideInput
		x, err := h.index(SideRef{m.GetTransformId(), m.GetSideInputId()})
		if err != nil {
			return nil, err
		}
		return x.keys[string(m.GetWindow())], nil
	default:
		return nil, fmt.Errorf("state key %T is not supported by beam-runner yet", key.GetType())
	}
}
