// Package stateplane serves BeamFnState requests: side inputs, user state
// and the pages of state-backed iterables, each routed by instruction id to
// the Handler of the bundle that owns the instruction. Gets are answered in
// pages of whole elements with continuation tokens, by the plane or by a
// handler that pages from the store itself (Pager); appends and clears go
// to handlers that accept writes (Writer). What a key means is the
// handler's business: the plane knows no state kinds.
package stateplane

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
)

// PageSize bounds one GetResponse so large state streams in pages.
const PageSize = 4 << 20

// Handler answers the state requests of one bundle.
type Handler interface {
	// Get returns the value for the key as pieces that each hold whole
	// encoded elements; the plane pages at piece boundaries, since SDKs
	// (Python's) decode every page on its own.
	Get(key *fnpb.StateKey) ([][]byte, error)
}

// Stream is the bidirectional state stream of one harness.
type Stream interface {
	Send(*fnpb.StateResponse) error
	Recv() (*fnpb.StateRequest, error)
}

// Router maps instruction ids to the handlers of running bundles.
type Router struct {
	mu       sync.Mutex
	handlers map[string]Handler
}

// NewRouter returns an empty router.
func NewRouter() *Router { return &Router{handlers: map[string]Handler{}} }

// Register installs the handler for an instruction until Unregister.
func (r *Router) Register(inst string, h Handler) {
	r.mu.Lock()
	r.handlers[inst] = h
	r.mu.Unlock()
}

// Unregister removes an instruction's handler.
func (r *Router) Unregister(inst string) {
	r.mu.Lock()
	delete(r.handlers, inst)
	r.mu.Unlock()
}

func (r *Router) handler(inst string) Handler {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.handlers[inst]
}

// Serve answers requests on the stream until it ends.
func (r *Router) Serve(s Stream) error {
	for {
		req, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return nil // the harness closed its side: a clean end, not an error
		}
		if err != nil {
			return err
		}
		if err := s.Send(r.answer(req)); err != nil {
			return err
		}
	}
}

func (r *Router) answer(req *fnpb.StateRequest) *fnpb.StateResponse {
	resp, err := r.answerErr(req)
	if err != nil {
		return &fnpb.StateResponse{Id: req.GetId(), Error: err.Error()}
	}
	resp.Id = req.GetId()
	return resp
}

func (r *Router) answerErr(req *fnpb.StateRequest) (*fnpb.StateResponse, error) {
	h := r.handler(req.GetInstructionId())
	if h == nil {
		return nil, fmt.Errorf("state request %q for unknown or finished instruction %q", req.GetId(), req.GetInstructionId())
	}
	switch req.GetRequest().(type) {
	case *fnpb.StateRequest_Get:
		if pg, ok := h.(Pager); ok {
			page, token, handled, err := pg.GetPage(req.GetStateKey(), req.GetGet().GetContinuationToken())
			if err != nil {
				return nil, err
			}
			if handled {
				return &fnpb.StateResponse{Response: &fnpb.StateResponse_Get{
					Get: &fnpb.StateGetResponse{Data: page, ContinuationToken: token}}}, nil
			}
		}
		data, err := h.Get(req.GetStateKey())
		if err != nil {
			return nil, err
		}
		page, token, err := Page(data, req.GetGet().GetContinuationToken())
		if err != nil {
			return nil, err
		}
		return &fnpb.StateResponse{Response: &fnpb.StateResponse_Get{
			Get: &fnpb.StateGetResponse{Data: page, ContinuationToken: token}}}, nil
	default:
		if w, ok := h.(Writer); ok {
			return w.Write(req)
		}
		return nil, fmt.Errorf("state request %q: %T is not supported for state key %v", req.GetId(), req.GetRequest(), keyKind(req.GetStateKey()))
	}
}

// Pager is the optional capability of handlers that page some keys
// themselves, from a store, with their own continuation tokens, rather
// than returning all the pieces at once; handled is false for other keys.
type Pager interface {
	GetPage(key *fnpb.StateKey, token []byte) (page, next []byte, handled bool, err error)
}

// Writer is the optional capability of handlers that accept state writes.
type Writer interface {
	Write(req *fnpb.StateRequest) (*fnpb.StateResponse, error)
}

// Page returns the pieces from the one the token names, up to about
// PageSize bytes (at least one piece); the returned token is empty on the
// last page.
func Page(pieces [][]byte, token []byte) ([]byte, []byte, error) {
	var start uint64
	if len(token) > 0 {
		if len(token) != 8 {
			return nil, nil, fmt.Errorf("malformed continuation token of %d bytes", len(token))
		}
		start = binary.BigEndian.Uint64(token)
		if start > uint64(len(pieces)) {
			return nil, nil, fmt.Errorf("continuation token names piece %d of %d", start, len(pieces))
		}
	}
	i := int(start)
	if i < len(pieces) && i+1 == len(pieces) {
		return pieces[i], nil, nil // common case: no copy
	}
	var page []byte
	for ; i < len(pieces); i++ {
		if len(page) > 0 && len(page)+len(pieces[i]) > PageSize {
			break
		}
		page = append(page, pieces[i]...)
	}
	if i >= len(pieces) {
		return page, nil, nil
	}
	return page, binary.BigEndian.AppendUint64(nil, uint64(i)), nil
}

func keyKind(k *fnpb.StateKey) string {
	if k == nil || k.GetType() == nil {
		return "<none>"
	}
	return fmt.Sprintf("%T", k.GetType())
}
