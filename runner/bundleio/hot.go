package bundleio

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sync/atomic"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	"github.com/beam-runner/beam-runner/runner/engine/agg"
	"github.com/beam-runner/beam-runner/stateplane"
)

// Hot is where a job's GroupByKeys page hot keys (agg/hot.go): Pages,
// nil when the job has none, and the count of pages served.
type Hot struct {
	Pages  agg.Spill
	Served *atomic.Int64
}

// hotState serves StateKey.Runner requests, the pages of hot keys, from
// the store one page at a time; other keys go to next.
type hotState struct {
	next   stateplane.Handler
	pages  agg.Spill
	served *atomic.Int64
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
	h.served.Add(1)
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
