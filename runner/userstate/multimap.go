package userstate

import "slices"

// mapDelta is a bundle's pending writes to one multimap: whether it cleared
// the whole committed map, then per map key what happened since.
type mapDelta struct {
	cleared bool
	keys    map[string]*bagDelta
}

func newMapDelta() *mapDelta { return &mapDelta{keys: map[string]*bagDelta{}} }

func (d *mapDelta) key(mk string) *bagDelta {
	kd := d.keys[mk]
	if kd == nil {
		kd = &bagDelta{cleared: d.cleared}
		d.keys[mk] = kd
	}
	return kd
}

// clearAll forgets earlier per-key writes: after it the bundle sees an
// empty map plus what it appends later.
func (d *mapDelta) clearAll() { *d = mapDelta{cleared: true, keys: map[string]*bagDelta{}} }

// values returns a map key's values as seen by the bundle.
func (d *mapDelta) values(committed map[string][][]byte, mk string) [][]byte {
	if d == nil {
		return clip(committed[mk])
	}
	if kd := d.keys[mk]; kd != nil {
		return kd.view(committed[mk])
	}
	if d.cleared {
		return nil
	}
	return clip(committed[mk])
}

// mapKeys returns the map keys that have values as seen by the bundle,
// sorted by their encoded bytes so the answer does not depend on history.
func (d *mapDelta) mapKeys(committed map[string][][]byte) [][]byte {
	var keys []string
	for mk, vs := range committed {
		if d == nil || (!d.cleared && d.keys[mk] == nil) {
			if len(vs) > 0 {
				keys = append(keys, mk)
			}
		}
	}
	if d != nil {
		for mk, kd := range d.keys {
			if kd.nonEmpty(committed[mk]) {
				keys = append(keys, mk)
			}
		}
	}
	slices.Sort(keys)
	out := make([][]byte, len(keys))
	for i, k := range keys {
		out[i] = []byte(k)
	}
	return out
}

// apply returns the committed map after the delta, or nil if it is empty.
// It mutates committed in place: maps are only read under the store lock.
func (d *mapDelta) apply(committed map[string][][]byte) map[string][][]byte {
	if d.cleared || committed == nil {
		committed = map[string][][]byte{}
	}
	for mk, kd := range d.keys {
		if vs := kd.apply(committed[mk]); len(vs) > 0 {
			committed[mk] = vs
		} else {
			delete(committed, mk)
		}
	}
	if len(committed) == 0 {
		return nil
	}
	return committed
}
