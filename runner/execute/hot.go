package execute

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"github.com/beam-runner/beam-runner/runner/workers"
	"slices"
	"strings"
	"sync/atomic"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	"github.com/beam-runner/beam-runner/runner/engine/agg"
	"github.com/beam-runner/beam-runner/runner/plan"
	"github.com/beam-runner/beam-runner/runner/stagekind"
	"github.com/beam-runner/beam-runner/stateplane"
)

// hotSpace is the job's spill space where GroupByKeys put the pages of hot
// keys.
const hotSpace = "\x00hot/"

// hotShare: a key's values read back from the spill stay in memory up to
// a quarter of its GroupByKey's budget; past it they are paged (agg/hot.go).
const hotShare = 4

// gbkHot gives a spilling GroupByKey its hot-key pages, if every reader of
// its output can take a state-backed iterable: SDK stages of the Go SDK,
// which read one from the plain iterable coder the GroupByKey's output
// has, and Python stages told by the plan that the values are state-backed
// (beam:coder:state_backed_iterable:v1, plan/statebacked.go).
func (b specBuilder) gbkHot(s *plan.Stage, budget int) (agg.Spill, []byte, int) {
	if b.cfg.Space == nil || len(s.Outputs) == 0 || !b.stateBackedReaders(s.Outputs[0]) {
		return nil, nil, 0
	}
	return b.cfg.Space(hotSpace), []byte(s.ID + "\x00"), max(budget/hotShare, 1)
}

// stateBackedReaders: pc has readers, all SDK stages reading it as their
// main input as a state-backed iterable.
func (b specBuilder) stateBackedReaders(pc string) bool {
	n := 0
	for _, s := range b.pl.Stages {
		for _, side := range s.SideInputs {
			if side.PColl == pc {
				return false
			}
		}
		if !slices.Contains(s.Inputs, pc) && !slices.Contains(s.CopyInputs, pc) {
			continue
		}
		if s.Kind != stagekind.SDK || !(b.goEnv(s.Env) || s.InputCoders[pc].StateBacked) {
			return false
		}
		n++
	}
	return n > 0
}

func (b specBuilder) goEnv(id string) bool {
	return strings.HasPrefix(workers.SDKBase(b.pl.Components.GetEnvironments()[id]), "beam:version:sdk_base:go:")
}

// withHot adds the serving of hot-key pages to a bundle's state handler
// when the job may have them.
func (r *run) withHot(h stateplane.Handler) stateplane.Handler {
	if r.scratch == nil || r.opts.MemoryLimit <= 0 {
		return h
	}
	return &hotState{next: h, pages: jobSpace(r.scratch)(hotSpace)}
}

// hotPagesServed counts the hot-key pages served, for tests and logs.
var hotPagesServed atomic.Int64

// hotState serves StateKey.Runner requests, the pages of hot keys, from
// the store one page at a time; other keys go to next.
type hotState struct {
	next  stateplane.Handler
	pages agg.Spill
}

// GetPage implements stateplane.Pager. The continuation token is the next
// page's number.
func (h *hotState) GetPage(key *fnpb.StateKey, token []byte) ([]byte, []byte, bool, error) {
	rk, ok := key.GetType().(*fnpb.StateKey_Runner_)
	if !ok {
		if pg, ok := h.next.(stateplane.Pager); ok {
			return pg.GetPage(key, token)
		}
		return nil, nil, false, nil
	}
	page := 0
	if len(token) > 0 {
		if len(token) != 4 {
			return nil, nil, true, fmt.Errorf("malformed continuation token of %d bytes for a runner state key", len(token))
		}
		page = int(binary.BigEndian.Uint32(token))
	}
	pk := agg.HotPageKey(rk.Runner.GetKey(), page)
	var data []byte
	err := h.pages.Scan(pk, func(k, v []byte) error {
		if len(k) == len(pk) {
			data = bytes.Clone(v)
		}
		return nil
	})
	if err == nil && len(data) == 0 {
		err = fmt.Errorf("no page %d for runner state key %x", page, rk.Runner.GetKey())
	}
	if err != nil {
		return nil, nil, true, err
	}
	hotPagesServed.Add(1)
	if data[0] == agg.HotLastPage {
		return data[1:], nil, true, nil
	}
	return data[1:], binary.BigEndian.AppendUint32(nil, uint32(page+1)), true, nil
}

// Get implements stateplane.Handler for the other keys.
func (h *hotState) Get(key *fnpb.StateKey) ([][]byte, error) {
	if h.next == nil {
		return nil, fmt.Errorf("state key %T: the stage reads no state", key.GetType())
	}
	return h.next.Get(key)
}

// Write implements stateplane.Writer for the other keys.
func (h *hotState) Write(req *fnpb.StateRequest) (*fnpb.StateResponse, error) {
	if w, ok := h.next.(stateplane.Writer); ok {
		return w.Write(req)
	}
	return nil, fmt.Errorf("state request %q: the stage writes no state", req.GetId())
}
