package userstate

import (
	"errors"
	"fmt"
)

// Kind is the kind of state a Key addresses, one per Fn API user state key
// type. The zero Kind is no key at all.
type Kind uint8

// State kinds.
const (
	Bag          Kind = iota + 1 // BagUserState
	Multimap                     // MultimapUserState: the values of one map key
	MultimapKeys                 // MultimapKeysUserState: the map's keys
	OrderedList                  // OrderedListUserState
)

// Range is an ordered list's half-open sort key range [Start, End).
type Range struct{ Start, End int64 }

// Key addresses user state the way the Fn API's StateKey does, in plain
// data: the driver translates protos, so the engine needs none.
type Key struct {
	Kind      Kind
	Transform string
	StateID   string
	Key       []byte // the encoded element key
	Window    []byte // the encoded window
	MapKey    []byte // Multimap only
	Range     *Range // OrderedList Get and Clear; nil on appends
}

// stateKey is a Key reduced to what the store needs.
type stateKey struct {
	kind Kind
	addr
	mapKey string // Multimap
	rng    span   // OrderedList Get and Clear
	hasRng bool
}

// parseKey validates a user state key; a zero or unknown kind is an error.
func parseKey(k Key) (stateKey, error) {
	sk := stateKey{kind: k.Kind, addr: mkAddr(k.Transform, k.StateID, k.Key, k.Window)}
	switch k.Kind {
	case Bag, MultimapKeys:
	case Multimap:
		sk.mapKey = string(k.MapKey)
	case OrderedList:
		if k.Range != nil {
			sk.rng, sk.hasRng = span{k.Range.Start, k.Range.End}, true
		}
	case 0:
		return stateKey{}, errors.New("userstate: state request without a state key")
	default:
		return stateKey{}, fmt.Errorf("userstate: state key kind %d is not user state", k.Kind)
	}
	return sk, nil
}

func mkAddr(transform, stateID string, key, window []byte) addr {
	return addr{Scope{transform, string(key), string(window)}, stateID}
}

// needRange rejects ordered-list reads and clears without a range: the
// proto requires one, and guessing "everything" could clear too much.
func (k stateKey) needRange() error {
	if k.kind == OrderedList && !k.hasRng {
		return fmt.Errorf("userstate: ordered list state %q of transform %q: read or clear without a sort key range", k.stateID, k.Transform)
	}
	return nil
}
