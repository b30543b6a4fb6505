package userstate

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// Snapshot format. A snapshot is the committed state of a Store as plain
// bytes, for checkpoints: equal states give equal bytes, and Restore
// accepts exactly what Snapshot writes (a canonical form), so a restored
// store snapshots to the same bytes.
//
//	snapshot = magic version:uvarint count:uvarint scope*
//	scope    = transform:str key:bytes window:bytes
//	           count:uvarint bag*  count:uvarint map*  count:uvarint list*
//	bag      = id:str count:uvarint piece:bytes*
//	map      = id:str count:uvarint (mapKey:bytes count:uvarint value:bytes*)*
//	list     = id:str count:uvarint (sortKey:varint data:bytes)*
//
// str and bytes are a uvarint length and the bytes; varint is zig-zag.
// Scopes are sorted by (transform, key, window), ids and map keys by their
// bytes, list entries by sort key (stable, as stored); nothing is empty:
// the store holds live state only.
const (
	snapshotMagic   = "beam-runner/userstate"
	SnapshotVersion = 1
)

// Snapshot returns the store's committed state in the snapshot format.
// Uncommitted Txns are not part of it.
func (s *Store) Snapshot() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := binary.AppendUvarint([]byte(snapshotMagic), SnapshotVersion)
	scopes := slices.SortedFunc(maps.Keys(s.mu.scopes), func(a, b Scope) int {
		return cmp.Or(cmp.Compare(a.Transform, b.Transform), cmp.Compare(a.Key, b.Key), cmp.Compare(a.Window, b.Window))
	})
	b = binary.AppendUvarint(b, uint64(len(scopes)))
	for _, sc := range scopes {
		c := s.mu.scopes[sc]
		b = appendStr(appendStr(appendStr(b, sc.Transform), sc.Key), sc.Window)
		b = binary.AppendUvarint(b, uint64(len(c.bags)))
		for _, id := range slices.Sorted(maps.Keys(c.bags)) {
			b = appendPieces(appendStr(b, id), c.bags[id])
		}
		b = binary.AppendUvarint(b, uint64(len(c.maps)))
		for _, id := range slices.Sorted(maps.Keys(c.maps)) {
			m := c.maps[id]
			b = binary.AppendUvarint(appendStr(b, id), uint64(len(m)))
			for _, k := range slices.Sorted(maps.Keys(m)) {
				b = appendPieces(appendStr(b, k), m[k])
			}
		}
		b = binary.AppendUvarint(b, uint64(len(c.lists)))
		for _, id := range slices.Sorted(maps.Keys(c.lists)) {
			l := c.lists[id]
			b = binary.AppendUvarint(appendStr(b, id), uint64(len(l)))
			for _, e := range l {
				b = appendStr(binary.AppendVarint(b, e.key), string(e.data))
			}
		}
	}
	return b
}

func appendStr(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func appendPieces(b []byte, ps [][]byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(ps)))
	for _, p := range ps {
		b = appendStr(b, string(p))
	}
	return b
}

// Restore builds a store from a snapshot. A snapshot of a newer version,
// or bytes that are not exactly what Snapshot writes, are refused with an
// error that says where.
func Restore(snap []byte) (*Store, error) {
	r := &reader{b: snap}
	if !bytes.HasPrefix(snap, []byte(snapshotMagic)) {
		return nil, errors.New("userstate: not a user state snapshot")
	}
	r.off = len(snapshotMagic)
	if v := r.uvarint(); r.err == nil && v != SnapshotVersion {
		return nil, fmt.Errorf("userstate: snapshot version %d, this build reads version %d", v, SnapshotVersion)
	}
	s := NewStore()
	var prev *Scope
	for n := r.count(); n > 0 && r.err == nil; n-- {
		sc := Scope{Transform: r.str(), Key: r.str(), Window: r.str()}
		if prev != nil && cmp.Or(cmp.Compare(prev.Transform, sc.Transform), cmp.Compare(prev.Key, sc.Key), cmp.Compare(prev.Window, sc.Window)) >= 0 {
			r.fail("scopes out of order")
		}
		prev = &sc
		c := s.cellsLocked(sc, true)
		readSorted(r, func(id string) { c.bags[id] = r.pieces() })
		readSorted(r, func(id string) {
			m := map[string][][]byte{}
			readSorted(r, func(k string) { m[k] = r.pieces() })
			if r.err == nil && len(m) == 0 {
				r.fail("empty map")
			}
			c.maps[id] = m
		})
		readSorted(r, func(id string) { c.lists[id] = r.entries() })
		if r.err == nil && c.empty() {
			r.fail("empty scope")
		}
	}
	if r.err == nil && r.off != len(snap) {
		r.fail("trailing bytes")
	}
	if r.err != nil {
		return nil, r.err
	}
	return s, nil
}

// readSorted reads a count, then that many ids in increasing order, each
// followed by what f reads; an empty collection is refused.
func readSorted(r *reader, f func(id string)) {
	prev, first := "", true
	for n := r.count(); n > 0 && r.err == nil; n-- {
		id := r.str()
		if !first && id <= prev {
			r.fail(fmt.Sprintf("id %q out of order", id))
			return
		}
		prev, first = id, false
		f(id)
	}
}

// reader decodes a snapshot, keeping the first error.
type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("userstate: bad snapshot at byte %d: %s", r.off, what)
	}
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 || n != len(binary.AppendUvarint(nil, v)) {
		r.fail("malformed or non-minimal varint")
		return 0
	}
	r.off += n
	return v
}

// count reads a collection size: at least one byte must follow per item,
// so a corrupt count cannot make Restore allocate or loop without bound.
func (r *reader) count() int {
	v := r.uvarint()
	if r.err == nil && v > uint64(len(r.b)-r.off) {
		r.fail("count larger than the snapshot")
		return 0
	}
	return int(v)
}

func (r *reader) str() string {
	n := r.count()
	if r.err != nil {
		return ""
	}
	s := string(r.b[r.off : r.off+n])
	r.off += n
	return s
}

func (r *reader) pieces() [][]byte {
	n := r.count()
	if r.err == nil && n == 0 {
		r.fail("empty cell")
	}
	ps := make([][]byte, 0, n)
	for ; n > 0 && r.err == nil; n-- {
		ps = append(ps, []byte(r.str()))
	}
	return ps
}

func (r *reader) entries() []entry {
	n := r.count()
	if r.err == nil && n == 0 {
		r.fail("empty ordered list")
	}
	es := make([]entry, 0, n)
	for ; n > 0 && r.err == nil; n-- {
		var k int64
		if r.err == nil {
			var m int
			if k, m = binary.Varint(r.b[r.off:]); m <= 0 || m != len(binary.AppendVarint(nil, k)) {
				r.fail("malformed or non-minimal sort key")
				break
			}
			r.off += m
		}
		if len(es) > 0 && k < es[len(es)-1].key {
			r.fail("ordered list entries out of order")
			break
		}
		es = append(es, entry{key: k, data: []byte(r.str())})
	}
	return es
}
