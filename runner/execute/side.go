package execute

import (
	"encoding/binary"
	"fmt"
	"sync"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/stateplane"
)

// sideRef identifies a side input as the SDK names it in state keys.
type sideRef struct{ Transform, SideInput string }

// sideHandler answers one stage's side-input state requests from the
// engine's indexes. It lives on the driver's side of the engine because it
// speaks the Fn API and is called from the state plane's goroutines.
type sideHandler struct {
	mu      sync.Mutex
	indexes map[sideRef]*coders.SideIndex
	build   map[sideRef]func() (*coders.SideIndex, error)
}

// newSideHandler serves indexes built lazily, once, by the given functions.
func newSideHandler(build map[sideRef]func() (*coders.SideIndex, error)) *sideHandler {
	return &sideHandler{indexes: map[sideRef]*coders.SideIndex{}, build: build}
}

func (h *sideHandler) index(ref sideRef) (*coders.SideIndex, error) {
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

// GetPage implements stateplane.Pager for iterable side inputs, paging
// straight from the index; the continuation token is the next element's
// number, as stateplane.Page's.
func (h *sideHandler) GetPage(key *fnpb.StateKey, token []byte) ([]byte, []byte, bool, error) {
	k, ok := key.GetType().(*fnpb.StateKey_IterableSideInput_)
	if !ok {
		return nil, nil, false, nil
	}
	it := k.IterableSideInput
	x, err := h.index(sideRef{it.GetTransformId(), it.GetSideInputId()})
	if err != nil {
		return nil, nil, true, err
	}
	from := 0
	if len(token) > 0 {
		if len(token) != 8 {
			return nil, nil, true, fmt.Errorf("malformed continuation token of %d bytes for side input %q", len(token), it.GetSideInputId())
		}
		from = int(min(binary.BigEndian.Uint64(token), 1<<40))
	}
	page, next, err := x.ValuesPage(it.GetWindow(), from, stateplane.PageSize)
	if err != nil {
		return nil, nil, true, fmt.Errorf("side input %q: %w", it.GetSideInputId(), err)
	}
	if next < 0 {
		return page, nil, true, nil
	}
	return page, binary.BigEndian.AppendUint64(nil, uint64(next)), true, nil
}

// Get implements stateplane.Handler.
func (h *sideHandler) Get(key *fnpb.StateKey) ([][]byte, error) {
	switch k := key.GetType().(type) {
	case *fnpb.StateKey_IterableSideInput_:
		it := k.IterableSideInput
		x, err := h.index(sideRef{it.GetTransformId(), it.GetSideInputId()})
		if err != nil {
			return nil, err
		}
		return x.Values(it.GetWindow()), nil
	case *fnpb.StateKey_MultimapSideInput_:
		m := k.MultimapSideInput
		x, err := h.index(sideRef{m.GetTransformId(), m.GetSideInputId()})
		if err != nil {
			return nil, err
		}
		return x.ByKey(m.GetWindow(), m.GetKey()), nil
	case *fnpb.StateKey_MultimapKeysSideInput_:
		m := k.MultimapKeysSideInput
		x, err := h.index(sideRef{m.GetTransformId(), m.GetSideInputId()})
		if err != nil {
			return nil, err
		}
		return x.Keys(m.GetWindow()), nil
	default:
		return nil, fmt.Errorf("state key %T is not supported by beam-runner yet", key.GetType())
	}
}
