package userstate

import (
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/beam-runner/beam-runner/runner/internal/wire"
)

// Snapshot format: the magic bytes, SnapshotVersion, then every scope with
// committed state, sorted, and its cells sorted by state id (see
// internal/wire for the encoding). Bump SnapshotVersion when the layout
// changes, and keep reading the versions still found in stores.
const (
	snapshotMagic   = "BRUSTATE"
	SnapshotVersion = 1
)

// Snapshot returns the committed state as bytes. Transactions not yet
// committed are not part of it: a checkpoint pairs this with the engine's
// snapshot taken at the same point, so a bundle's state writes and its
// outputs are either both in the checkpoint or both not.
func (s *Store) Snapshot() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	var w wire.Writer
	w.String(snapshotMagic)
	w.Uint(SnapshotVersion)
	scopes := make([]Scope, 0, len(s.mu.scopes))
	for sc := range s.mu.scopes {
		scopes = append(scopes, sc)
	}
	sortScopes(scopes)
	w.Len(len(scopes))
	for _, sc := range scopes {
		w.String(sc.Transform)
		w.String(sc.Key)
		w.String(sc.Window)
		s.mu.scopes[sc].snapshot(&w)
	}
	return w.Bytes()
}

func sortScopes(ss []Scope) {
	sort.Slice(ss, func(i, j int) bool {
		a, b := ss[i], ss[j]
		if a.Transform != b.Transform {
			return a.Transform < b.Transform
		}
		if a.Key != b.Key {
			return a.Key < b.Key
		}
		return a.Window < b.Window
	})
}

func (c *cells) snapshot(w *wire.Writer) {
	w.Len(len(c.bags))
	for _, id := range slices.Sorted(maps.Keys(c.bags)) {
		w.String(id)
		writePieces(w, c.bags[id])
	}
	w.Len(len(c.maps))
	for _, id := range slices.Sorted(maps.Keys(c.maps)) {
		w.String(id)
		m := c.maps[id]
		w.Len(len(m))
		for _, mk := range slices.Sorted(maps.Keys(m)) {
			w.String(mk)
			writePieces(w, m[mk])
		}
	}
	w.Len(len(c.lists))
	for _, id := range slices.Sorted(maps.Keys(c.lists)) {
		w.String(id)
		es := c.lists[id]
		w.Len(len(es))
		for _, e := range es {
			w.Int(e.key)
			w.Blob(e.data)
		}
	}
}

func writePieces(w *wire.Writer, ps [][]byte) {
	w.Len(len(ps))
	for _, p := range ps {
		w.Blob(p)
	}
}

// RestoreStore rebuilds a store from Snapshot's bytes. A newer format or
// damaged bytes give an error that says which.
func RestoreStore(snap []byte) (*Store, error) {
	r := wire.NewReader(snap)
	if m := r.String(); r.Err() != nil || m != snapshotMagic {
		return nil, fmt.Errorf("userstate: not a user state snapshot")
	}
	if v := r.Uint(); r.Err() == nil && v != SnapshotVersion {
		if v > SnapshotVersion {
			return nil, fmt.Errorf("userstate: snapshot format version %d is newer than this runner's (%d); use a newer runner", v, SnapshotVersion)
		}
		return nil, fmt.Errorf("userstate: snapshot format version %d is not supported (this runner reads %d)", v, SnapshotVersion)
	}
	s := NewStore()
	for n := r.Len(); n > 0 && r.Err() == nil; n-- {
		sc := Scope{Transform: r.String(), Key: r.String(), Window: r.String()}
		c := s.cellsLocked(sc, true)
		restoreCells(r, c)
		if r.Err() == nil && c.empty() {
			r.Failf("scope %q/%x/%x holds no state", sc.Transform, sc.Key, sc.Window)
		}
	}
	if err := r.Done(); err != nil {
		return nil, fmt.Errorf("userstate: restoring: %w", err)
	}
	return s, nil
}

func restoreCells(r *wire.Reader, c *cells) {
	for n := r.Len(); n > 0 && r.Err() == nil; n-- {
		id := r.String()
		c.bags[id] = readPieces(r)
	}
	for n := r.Len(); n > 0 && r.Err() == nil; n-- {
		id := r.String()
		m := map[string][][]byte{}
		for k := r.Len(); k > 0 && r.Err() == nil; k-- {
			mk := r.String()
			m[mk] = readPieces(r)
		}
		c.maps[id] = m
	}
	for n := r.Len(); n > 0 && r.Err() == nil; n-- {
		id := r.String()
		var es []entry
		for k := r.Len(); k > 0 && r.Err() == nil; k-- {
			es = append(es, entry{key: r.Int(), data: r.Blob()})
			if len(es) > 1 && es[len(es)-2].key > es[len(es)-1].key {
				r.Failf("ordered list %q is not sorted", id)
			}
		}
		c.lists[id] = es
	}
}

func readPieces(r *wire.Reader) [][]byte {
	var ps [][]byte
	for n := r.Len(); n > 0 && r.Err() == nil; n-- {
		ps = append(ps, r.Blob())
	}
	return ps
}

// RenameTransforms returns snapshot snap with each scope's transform
// renamed by rename (old id to new), and the scopes of transforms it
// does not name left out: a job started from a savepoint of another
// version of its pipeline, whose transforms have other ids and whose
// dropped steps' state goes (--allow_dropped_state). Pure.
func RenameTransforms(snap []byte, rename map[string]string) ([]byte, error) {
	old, err := RestoreStore(snap)
	if err != nil {
		return nil, err
	}
	s := NewStore()
	for sc, c := range old.mu.scopes {
		to, ok := rename[sc.Transform]
		if !ok {
			continue
		}
		sc.Transform = to
		s.mu.scopes[sc] = c
	}
	return s.Snapshot(), nil
}
