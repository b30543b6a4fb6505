// Package bundleio is the runner's side of a bundle's exchange with its
// SDK harness, below the driver: its input cut into data-plane frames,
// its output cut into whole elements for the engine, and its state
// requests (side inputs, user state, hot-key pages) answered.
package bundleio

import (
	"errors"
	"fmt"
	"github.com/beam-runner/beam-runner/runner/plan"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/runner/userstate"
	"github.com/beam-runner/beam-runner/stateplane"
)

// State answers a bundle's state requests: side inputs from the stage's
// side handler, user state from the bundle's transaction, and the pages
// of hot keys when the job may have them.
func State(side *Sides, txn *userstate.Txn, hot Hot) stateplane.Handler {
	h := bundleState(side, txn)
	if hot.Pages == nil {
		return h
	}
	return &hotState{next: h, pages: hot.Pages, served: hot.Served}
}

func bundleState(side *Sides, txn *userstate.Txn) stateplane.Handler {
	switch {
	case txn == nil && side == nil:
		return nil
	case txn == nil:
		return side
	}
	return &combinedState{side: side, user: userState{txn}}
}

type combinedState struct {
	side *Sides
	user userState
}

func (c *combinedState) Get(key *fnpb.StateKey) ([][]byte, error) {
	if isSideInput(key) && c.side != nil {
		return c.side.Get(key)
	}
	return c.user.Get(key)
}

// GetPage implements stateplane.Pager for the side inputs that page.
func (c *combinedState) GetPage(key *fnpb.StateKey, token []byte) ([]byte, []byte, bool, error) {
	if isSideInput(key) && c.side != nil {
		return c.side.GetPage(key, token)
	}
	return nil, nil, false, nil
}

func (c *combinedState) Write(req *fnpb.StateRequest) (*fnpb.StateResponse, error) {
	return c.user.Write(req)
}

func isSideInput(key *fnpb.StateKey) bool {
	switch key.GetType().(type) {
	case *fnpb.StateKey_IterableSideInput_, *fnpb.StateKey_MultimapSideInput_, *fnpb.StateKey_MultimapKeysSideInput_:
		return true
	}
	return false
}

// userState serves a bundle's user state transaction over the Fn API,
// translating state keys so the engine's userstate package needs no protos.
type userState struct{ txn *userstate.Txn }

// Get implements stateplane.Handler.
func (u userState) Get(key *fnpb.StateKey) ([][]byte, error) {
	k, err := userKey(key)
	if err != nil {
		return nil, err
	}
	return u.txn.Get(k)
}

// Write implements stateplane.Writer: Append and Clear requests.
func (u userState) Write(req *fnpb.StateRequest) (*fnpb.StateResponse, error) {
	k, err := userKey(req.GetStateKey())
	if err != nil {
		return nil, err
	}
	switch r := req.GetRequest().(type) {
	case *fnpb.StateRequest_Append:
		if err := u.txn.Append(k, r.Append.GetData()); err != nil {
			return nil, err
		}
		return &fnpb.StateResponse{Response: &fnpb.StateResponse_Append{Append: &fnpb.StateAppendResponse{}}}, nil
	case *fnpb.StateRequest_Clear:
		if err := u.txn.Clear(k); err != nil {
			return nil, err
		}
		return &fnpb.StateResponse{Response: &fnpb.StateResponse_Clear{Clear: &fnpb.StateClearResponse{}}}, nil
	default:
		return nil, fmt.Errorf("userstate: state request %q of type %T is not a write", req.GetId(), req.GetRequest())
	}
}

// userKey translates a user state key; side inputs, runner keys and a
// missing key are errors that name the key type.
func userKey(key *fnpb.StateKey) (userstate.Key, error) {
	switch k := key.GetType().(type) {
	case *fnpb.StateKey_BagUserState_:
		b := k.BagUserState
		return userstate.Key{Kind: userstate.Bag, Transform: b.GetTransformId(), StateID: b.GetUserStateId(), Key: b.GetKey(), Window: b.GetWindow()}, nil
	case *fnpb.StateKey_MultimapUserState_:
		m := k.MultimapUserState
		return userstate.Key{Kind: userstate.Multimap, Transform: m.GetTransformId(), StateID: m.GetUserStateId(), Key: m.GetKey(), Window: m.GetWindow(), MapKey: m.GetMapKey()}, nil
	case *fnpb.StateKey_MultimapKeysUserState_:
		m := k.MultimapKeysUserState
		return userstate.Key{Kind: userstate.MultimapKeys, Transform: m.GetTransformId(), StateID: m.GetUserStateId(), Key: m.GetKey(), Window: m.GetWindow()}, nil
	case *fnpb.StateKey_OrderedListUserState_:
		o := k.OrderedListUserState
		uk := userstate.Key{Kind: userstate.OrderedList, Transform: o.GetTransformId(), StateID: o.GetUserStateId(), Key: o.GetKey(), Window: o.GetWindow()}
		if r := o.GetRange(); r != nil {
			uk.Range = &userstate.Range{Start: r.GetStart(), End: r.GetEnd()}
		}
		return uk, nil
	case nil:
		return userstate.Key{}, errors.New("userstate: state request without a state key")
	default:
		return userstate.Key{}, fmt.Errorf("userstate: state key type %T is not user state", k)
	}
}

// OrderedLists finds the element coders of the plan's ordered-list
// states, for the user-state transactions of its bundles.
func OrderedLists(pl *plan.Plan) userstate.Lookup {
	return func(transform, stateID string) (*coders.Codec, error) {
		id, err := pl.OrderedListCoder(transform, stateID)
		if err != nil {
			return nil, err
		}
		return coders.Compile(pl.Components.GetCoders(), id)
	}
}
