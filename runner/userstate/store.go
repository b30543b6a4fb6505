package userstate

import (
	"cmp"
	"slices"
	"sync"

	"github.com/beam-runner/beam-runner/runner/coders"
)

// Scope is the unit of garbage collection: all state of one transform for
// one key in one window. Key and Window are the encoded bytes the SDK sends.
type Scope struct {
	Transform string
	Key       string
	Window    string
}

// addr names one state cell: a state id within a scope.
type addr struct {
	Scope
	stateID string
}

// cells is the committed state of one scope, by state id per kind. Bags,
// multimaps and ordered lists with the same id are distinct cells, since the
// SDKs address them with distinct key types.
type cells struct {
	bags  map[string][][]byte
	maps  map[string]map[string][][]byte
	lists map[string][]entry
}

func (c *cells) empty() bool {
	return len(c.bags) == 0 && len(c.maps) == 0 && len(c.lists) == 0
}

// Store holds all user state of one job. Its methods are safe for
// concurrent use; the committed state is guarded by mu so that running Txns
// may read while the driver commits another Txn (for different keys).
//
// Committed slices are never modified in place: commits either append past
// the length readers were handed or build new slices. That lets Get hand out
// committed pieces without copying. Lock order: Txn.mu before Store.mu.
type Store struct {
	mu struct {
		sync.Mutex
		scopes map[Scope]*cells
	}
}

// NewStore returns an empty store.
func NewStore() *Store {
	s := &Store{}
	s.mu.scopes = map[Scope]*cells{}
	return s
}

// Lookup returns the codec of an ordered-list state's value part as the SDK
// writes it after the sort key (see the package comment).
type Lookup func(transformID, stateID string) (*coders.Codec, error)

// Begin starts one bundle's transaction. orderedList may be nil when the
// bundle's transforms have no ordered-list state; appends to one then fail.
func (s *Store) Begin(orderedList Lookup) *Txn {
	return newTxn(s, orderedList)
}

// Commit applies the bundle's writes atomically: no Txn reading the store
// sees part of them. Writes to t after Commit fail, and committing t again
// does nothing, so a driver retrying its own bookkeeping cannot apply a
// bundle twice. It panics if t belongs to another store (a driver bug).
func (s *Store) Commit(t *Txn) {
	if t.s != s {
		panic("userstate: Commit of a Txn begun on another Store")
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.mu.done {
		return
	}
	t.mu.done = true
	s.mu.Lock()
	defer s.mu.Unlock()
	t.applyLocked(s)
}

// DropWindow deletes all committed state (every state id and kind) of one
// transform for one key and window, once the window has expired. A Txn
// still holding writes to that scope recreates it when committed; the engine
// drops a window only after its last bundle there.
func (s *Store) DropWindow(transformID string, key, window []byte) {
	s.mu.Lock()
	delete(s.mu.scopes, Scope{transformID, string(key), string(window)})
	s.mu.Unlock()
}

// Scopes lists the scopes that hold committed state, sorted, for tests and
// for drivers checking that garbage collection keeps up.
func (s *Store) Scopes() []Scope {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Scope, 0, len(s.mu.scopes))
	for sc := range s.mu.scopes {
		out = append(out, sc)
	}
	slices.SortFunc(out, func(a, b Scope) int {
		return cmp.Or(cmp.Compare(a.Transform, b.Transform),
			cmp.Compare(a.Key, b.Key), cmp.Compare(a.Window, b.Window))
	})
	return out
}

// Stats summarises committed state for metrics.
type Stats struct {
	Scopes int // transform+key+window combinations with state
	Cells  int // non-empty state cells (a multimap counts once)
	Pieces int // stored pieces: bag appends, map values, list entries
	Bytes  int // bytes of those pieces
}

// Stats walks the whole store; it costs O(pieces), so call it for metrics
// snapshots, not per element.
func (s *Store) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Stats{Scopes: len(s.mu.scopes)}
	count := func(ps [][]byte) {
		st.Pieces += len(ps)
		for _, p := range ps {
			st.Bytes += len(p)
		}
	}
	for _, c := range s.mu.scopes {
		st.Cells += len(c.bags) + len(c.maps) + len(c.lists)
		for _, b := range c.bags {
			count(b)
		}
		for _, m := range c.maps {
			for _, v := range m {
				count(v)
			}
		}
		for _, l := range c.lists {
			st.Pieces += len(l)
			for _, e := range l {
				st.Bytes += len(e.data)
			}
		}
	}
	return st
}

// cellsLocked returns the scope's committed cells, creating them if create.
func (s *Store) cellsLocked(sc Scope, create bool) *cells {
	c := s.mu.scopes[sc]
	if c == nil && create {
		c = &cells{bags: map[string][][]byte{}, maps: map[string]map[string][][]byte{}, lists: map[string][]entry{}}
		s.mu.scopes[sc] = c
	}
	return c
}

// gcLocked forgets a scope left empty by a commit, so memory and Scopes
// track live state only.
func (s *Store) gcLocked(sc Scope) {
	if c := s.mu.scopes[sc]; c != nil && c.empty() {
		delete(s.mu.scopes, sc)
	}
}
