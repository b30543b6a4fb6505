package userstate

import (
	"testing"

	"github.com/beam-runner/beam-runner/runner/coders"
)

// FuzzRequests drives a store with state requests decoded from random bytes:
// arbitrary key types, ranges, data and interleaved commits and drops. The
// store must never panic, and every read of a well-formed key must equal
// what the naive replay model says.
func FuzzRequests(f *testing.F) {
	f.Add([]byte{0, 0, 1, 'a', 3, 0, 2, 5, 4, 3, 1, 0, 9})
	f.Add([]byte{3, 1, 2, 2, 5, 1, 3, 8, 6, 200, 7, 1, 1, 0})
	f.Add([]byte{2, 9, 9, 9, 9, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02})
	lookup := varintLookup(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		s, m := NewStore(), newModel()
		txns := []*Txn{s.Begin(lookup), s.Begin(lookup)}
		logs := make([][]modelOp, 2) // each txn's accepted writes
		for len(b) >= 3 {
			op, which, sel := b[0], int(b[1]%2), b[2]
			b = b[3:]
			tx := txns[which]
			key := fuzzKey(sel, &b)
			switch op % 6 {
			case 0, 1:
				data := take(&b, int(sel%16))
				if err := write(tx, appendReq(key, data)); err == nil {
					logs[which] = append(logs[which], appendOp(t, key, data))
				}
			case 2:
				if err := write(tx, clearReq(key)); err == nil {
					k, _ := parseKey(key)
					logs[which] = append(logs[which], modelOp{k: k, clear: true})
				}
			case 3:
				got, err := tx.Get(key)
				if !wellFormed(key) {
					break
				}
				if err != nil {
					t.Fatalf("Get(%v): %v", key, err)
				}
				k, _ := parseKey(key)
				if want := m.view(logs[which]).read(k); show(got) != show(want) {
					t.Fatalf("Get(%v) = %q, model says %q", key, show(got), show(want))
				}
			case 4:
				s.Commit(tx)
				for _, op := range logs[which] {
					m.apply(op)
				}
				txns[which], logs[which] = s.Begin(lookup), nil
			case 5:
				s.DropWindow(tr, []byte{sel % 2}, []byte{sel % 3})
				m.drop(Scope{tr, string([]byte{sel % 2}), string([]byte{sel % 3})})
			}
		}
		s.Stats()
		s.Scopes()
	})
}

// fuzzKey picks a state key (user state of each kind, an unsupported kind,
// or none) over a tiny space of ids, keys and windows so operations collide.
func fuzzKey(sel byte, b *[]byte) Key {
	id, key, win, mk := string('a'+rune(sel%2)), string([]byte{sel % 2}), string([]byte{sel % 3}), string([]byte{sel % 4})
	switch (sel / 8) % 6 {
	case 0:
		return bag(id, key, win)
	case 1:
		return mm(id, key, win, mk)
	case 2:
		return mmKeys(id, key, win)
	case 3:
		var r *Range
		if rb := take(b, 2); len(rb) == 2 {
			r = rng(int64(int8(rb[0])), int64(int8(rb[1])))
		}
		return list(id, key, win, r)
	case 4:
		return Key{Kind: OrderedList + 1 + Kind(sel%3), Transform: tr} // not user state
	}
	return Key{}
}

// appendOp records an accepted append for the model, parsing list entries
// itself with the same varint format the lookup serves.
func appendOp(t *testing.T, key Key, data []byte) modelOp {
	k, _ := parseKey(key)
	op := modelOp{k: k, data: data}
	for off := 0; k.kind == OrderedList && off < len(data); {
		sk, n, err := coders.Varint(data[off:])
		if err != nil {
			t.Fatalf("accepted unparsable list data %x", data)
		}
		_, m, err := coders.Varint(data[off+n:])
		if err != nil {
			t.Fatalf("accepted unparsable list data %x", data)
		}
		op.es = append(op.es, entry{key: sk, data: data[off : off+n+m]})
		off += n + m
	}
	return op
}

func wellFormed(k Key) bool {
	switch k.Kind {
	case OrderedList:
		return k.Range != nil
	case Bag, Multimap, MultimapKeys:
		return true
	}
	return false
}

func take(b *[]byte, n int) []byte {
	n = min(n, len(*b))
	out := (*b)[:n]
	*b = (*b)[n:]
	return out
}
