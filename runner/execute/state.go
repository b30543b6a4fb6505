package execute

import (
	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/runner/engine"
	"github.com/beam-runner/beam-runner/runner/engine/userstate"
	"github.com/beam-runner/beam-runner/stateplane"
)

// bundleState answers a bundle's state requests: side inputs from the
// stage's side handler, user state from the bundle's transaction.
func bundleState(side *engine.SideHandler, txn *userstate.Txn) stateplane.Handler {
	switch {
	case txn == nil && side == nil:
		return nil
	case txn == nil:
		return side
	}
	return &combinedState{side: side, txn: txn}
}

type combinedState struct {
	side *engine.SideHandler
	txn  *userstate.Txn
}

func (c *combinedState) Get(key *fnpb.StateKey) ([][]byte, error) {
	if isSideInput(key) && c.side != nil {
		return c.side.Get(key)
	}
	return c.txn.Get(key)
}

func (c *combinedState) Write(req *fnpb.StateRequest) (*fnpb.StateResponse, error) {
	return c.txn.Write(req)
}

func isSideInput(key *fnpb.StateKey) bool {
	switch key.GetType().(type) {
	case *fnpb.StateKey_IterableSideInput_, *fnpb.StateKey_MultimapSideInput_, *fnpb.StateKey_MultimapKeysSideInput_:
		return true
	}
	return false
}

// orderedListCodec finds the element coder of an ordered-list state.
func (r *run) orderedListCodec(transform, stateID string) (*coders.Codec, error) {
	id, err := r.plan.OrderedListCoder(transform, stateID)
	if err != nil {
		return nil, err
	}
	return coders.Compile(r.plan.Components.GetCoders(), id)
}
