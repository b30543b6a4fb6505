package bundleio

import (
	"encoding/binary"
	"fmt"
	"github.com/beam-runner/beam-runner/runner/engine"
	"github.com/beam-runner/beam-runner/runner/plan"
	"sync"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/stateplane"
)

// sideRef identifies a side input as the SDK names it in state keys.
type sideRef struct{ Transform, SideInput string }

// Sides answers one stage's side-input state requests from the
// engine's indexes. It lives on the driver's side of the engine because it
// speaks the Fn API and is called from the state plane's goroutines.
type Sides struct {
	mu      sync.Mutex
	indexes map[sideRef]*coders.SideIndex
	build   map[sideRef]func() (*coders.SideIndex, error)
}

// newSides serves indexes built lazily, once, by the given functions.
func newSides(build map[sideRef]func() (*coders.SideIndex, error)) *Sides {
	return &Sides{indexes: map[sideRef]*coders.SideIndex{}, build: build}
}

func (s *Sides) index(ref sideRef) (*coders.SideIndex, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if x := s.indexes[ref]; x != nil {
		return x, nil
	}
	b := s.build[ref]
	if b == nil {
		return nil, fmt.Errorf("no side input %q for transform %q", ref.SideInput, ref.Transform)
	}
	x, err := b()
	if err != nil {
		return nil, fmt.Errorf("side input %q of transform %q: %w", ref.SideInput, ref.Transform, err)
	}
	s.indexes[ref] = x
	return x, nil
}

// GetPage implements stateplane.Pager for iterable side inputs, paging
// straight from the index; the continuation token is the next element's
// number, as stateplane.Page's.
func (s *Sides) GetPage(key *fnpb.StateKey, token []byte) ([]byte, []byte, bool, error) {
	k, ok := key.GetType().(*fnpb.StateKey_IterableSideInput_)
	if !ok {
		return nil, nil, false, nil
	}
	it := k.IterableSideInput
	x, err := s.index(sideRef{it.GetTransformId(), it.GetSideInputId()})
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
func (s *Sides) Get(key *fnpb.StateKey) ([][]byte, error) {
	switch k := key.GetType().(type) {
	case *fnpb.StateKey_IterableSideInput_:
		it := k.IterableSideInput
		x, err := s.index(sideRef{it.GetTransformId(), it.GetSideInputId()})
		if err != nil {
			return nil, err
		}
		return x.Values(it.GetWindow()), nil
	case *fnpb.StateKey_MultimapSideInput_:
		m := k.MultimapSideInput
		x, err := s.index(sideRef{m.GetTransformId(), m.GetSideInputId()})
		if err != nil {
			return nil, err
		}
		return x.ByKey(m.GetWindow(), m.GetKey()), nil
	case *fnpb.StateKey_MultimapKeysSideInput_:
		m := k.MultimapKeysSideInput
		x, err := s.index(sideRef{m.GetTransformId(), m.GetSideInputId()})
		if err != nil {
			return nil, err
		}
		return x.Keys(m.GetWindow()), nil
	default:
		return nil, fmt.Errorf("state key %T is not supported by beam-runner yet", key.GetType())
	}
}

// NewSides gives a stage the handler of its side inputs, whose data
// sideData gives by PCollection (the engine's, complete for the windows
// the stage's bundles read), and their cache tokens, new with each call.
func NewSides(pl *plan.Plan, sides []plan.SideInput, sideData func(pc string) *engine.Data) (*Sides, []*fnpb.ProcessBundleRequest_CacheToken, error) {
	build := map[sideRef]func() (*coders.SideIndex, error){}
	for _, si := range sides {
		wv, err := pl.WireCodec(si.PColl)
		if err != nil {
			return nil, nil, err
		}
		var key *coders.Codec
		switch si.URN {
		case coders.SideMultimap:
			if key = wv.Elem.Component(0); key == nil {
				return nil, nil, fmt.Errorf("multimap side input %q of %q is not KV-coded", si.Tag, si.Transform)
			}
		case coders.SideIterable:
		default:
			return nil, nil, fmt.Errorf("side input %q of %q: access pattern %q is not supported", si.Tag, si.Transform, si.URN)
		}
		data := sideData(si.PColl)
		build[sideRef{Transform: si.Transform, SideInput: si.Tag}] = func() (*coders.SideIndex, error) {
			return coders.IndexSide(data.Chunks, wv, key)
		}
	}
	tokens, err := sideCacheTokens(sides)
	if err != nil {
		return nil, nil, err
	}
	return newSides(build), tokens, nil
}
