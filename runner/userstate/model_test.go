package userstate

import (
	"maps"
	"slices"
)

// model is a deliberately naive reference for the store: committed state
// fully materialised, and a transaction's view computed by replaying its
// accepted writes on a copy. It shares no code with the delta logic.
type model struct {
	bags  map[addr][][]byte
	maps  map[addr]map[string][][]byte
	lists map[addr][]entry
}

type modelOp struct {
	k     stateKey
	clear bool
	data  []byte
	es    []entry
}

func newModel() *model {
	return &model{bags: map[addr][][]byte{}, maps: map[addr]map[string][][]byte{}, lists: map[addr][]entry{}}
}

func (m *model) clone() *model {
	c := newModel()
	for a, v := range m.bags {
		c.bags[a] = slices.Clone(v)
	}
	for a, v := range m.maps {
		c.maps[a] = maps.Clone(v)
	}
	for a, v := range m.lists {
		c.lists[a] = slices.Clone(v)
	}
	return c
}

func (m *model) apply(op modelOp) {
	k := op.k
	switch {
	case k.kind == Bag && op.clear:
		delete(m.bags, k.addr)
	case k.kind == Bag:
		m.bags[k.addr] = append(m.bags[k.addr], op.data)
	case k.kind == MultimapKeys:
		delete(m.maps, k.addr)
	case k.kind == Multimap:
		if m.maps[k.addr] == nil {
			m.maps[k.addr] = map[string][][]byte{}
		}
		if op.clear {
			delete(m.maps[k.addr], k.mapKey)
		} else {
			m.maps[k.addr][k.mapKey] = append(slices.Clone(m.maps[k.addr][k.mapKey]), op.data)
		}
	case op.clear:
		m.lists[k.addr] = slices.DeleteFunc(m.lists[k.addr], func(e entry) bool { return k.rng.has(e.key) })
	default:
		// Insert each entry after all entries with keys <= its key.
		for _, e := range op.es {
			l := m.lists[k.addr]
			i := len(l)
			for i > 0 && l[i-1].key > e.key {
				i--
			}
			m.lists[k.addr] = slices.Insert(l, i, e)
		}
	}
}

func (m *model) read(k stateKey) [][]byte {
	switch k.kind {
	case Bag:
		return m.bags[k.addr]
	case Multimap:
		return m.maps[k.addr][k.mapKey]
	case MultimapKeys:
		var out [][]byte
		for _, mk := range slices.Sorted(maps.Keys(m.maps[k.addr])) {
			if len(m.maps[k.addr][mk]) > 0 {
				out = append(out, []byte(mk))
			}
		}
		return out
	}
	var out [][]byte
	for _, e := range m.lists[k.addr] {
		if k.rng.has(e.key) {
			out = append(out, e.data)
		}
	}
	return out
}

func (m *model) drop(sc Scope) {
	for a := range m.bags {
		if a.Scope == sc {
			delete(m.bags, a)
		}
	}
	for a := range m.maps {
		if a.Scope == sc {
			delete(m.maps, a)
		}
	}
	for a := range m.lists {
		if a.Scope == sc {
			delete(m.lists, a)
		}
	}
}

// view is what a transaction with these accepted writes should read.
func (m *model) view(ops []modelOp) *model {
	v := m.clone()
	for _, op := range ops {
		v.apply(op)
	}
	return v
}
