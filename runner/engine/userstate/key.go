package userstate

import (
	"errors"
	"fmt"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
)

type kind uint8

const (
	kindBag kind = iota
	kindMap
	kindMapKeys
	kindList
)

// stateKey is a StateKey reduced to what the store needs, so the per-kind
// code never touches protos.
type stateKey struct {
	kind kind
	addr
	mapKey string // kindMap
	rng    span   // kindList Get and Clear
	hasRng bool
}

// parseKey validates a user state key; anything else (side inputs, runner
// keys, a missing key) is an error that names the key type.
func parseKey(key *fnpb.StateKey) (stateKey, error) {
	switch k := key.GetType().(type) {
	case *fnpb.StateKey_BagUserState_:
		b := k.BagUserState
		return stateKey{kind: kindBag, addr: mkAddr(b.GetTransformId(), b.GetUserStateId(), b.GetKey(), b.GetWindow())}, nil
	case *fnpb.StateKey_MultimapUserState_:
		m := k.MultimapUserState
		return stateKey{kind: kindMap, addr: mkAddr(m.GetTransformId(), m.GetUserStateId(), m.GetKey(), m.GetWindow()),
			mapKey: string(m.GetMapKey())}, nil
	case *fnpb.StateKey_MultimapKeysUserState_:
		m := k.MultimapKeysUserState
		return stateKey{kind: kindMapKeys, addr: mkAddr(m.GetTransformId(), m.GetUserStateId(), m.GetKey(), m.GetWindow())}, nil
	case *fnpb.StateKey_OrderedListUserState_:
		o := k.OrderedListUserState
		sk := stateKey{kind: kindList, addr: mkAddr(o.GetTransformId(), o.GetUserStateId(), o.GetKey(), o.GetWindow())}
		if r := o.GetRange(); r != nil {
			sk.rng, sk.hasRng = span{r.GetStart(), r.GetEnd()}, true
		}
		return sk, nil
	case nil:
		return stateKey{}, errors.New("userstate: state request without a state key")
	default:
		return stateKey{}, fmt.Errorf("userstate: state key type %T is not user state", k)
	}
}

func mkAddr(transform, stateID string, key, window []byte) addr {
	return addr{Scope{transform, string(key), string(window)}, stateID}
}

// needRange rejects ordered-list reads and clears without a range: the
// proto requires one, and guessing "everything" could clear too much.
func (k stateKey) needRange() error {
	if k.kind == kindList && !k.hasRng {
		return fmt.Errorf("userstate: ordered list state %q of transform %q: read or clear without a sort key range", k.stateID, k.Transform)
	}
	return nil
}
