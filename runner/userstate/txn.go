package userstate

import (
	"errors"
	"fmt"
	"sync"
)

// Txn is one bundle's view of the store: reads see the committed store plus
// the bundle's own writes; writes are buffered until Store.Commit.
//
// Get, Append and Clear may run on the state plane's goroutine (through the
// driver's Fn API adapter) while the driver commits other Txns; the Txn's
// own mutex serialises them against its Commit.
type Txn struct {
	s      *Store
	lookup Lookup
	mu     struct {
		sync.Mutex
		done  bool // committed: further writes are refused
		bags  map[addr]*bagDelta
		maps  map[addr]*mapDelta
		lists map[addr]*listDelta
	}
}

func newTxn(s *Store, lookup Lookup) *Txn {
	t := &Txn{s: s, lookup: lookup}
	t.mu.bags = map[addr]*bagDelta{}
	t.mu.maps = map[addr]*mapDelta{}
	t.mu.lists = map[addr]*listDelta{}
	return t
}

// errCommitted refuses writes that would silently be lost.
var errCommitted = errors.New("userstate: write to a transaction that was already committed")

// Get returns the state's value as pieces of whole encoded elements. The
// pieces are shared with the store and must not be modified.
func (t *Txn) Get(key Key) ([][]byte, error) {
	k, err := parseKey(key)
	if err != nil {
		return nil, err
	}
	if err := k.needRange(); err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	c := t.s.cellsLocked(k.Scope, false)
	if c == nil {
		c = &cells{}
	}
	switch k.kind {
	case Bag:
		return t.mu.bags[k.addr].view(c.bags[k.stateID]), nil
	case Multimap:
		return t.mu.maps[k.addr].values(c.maps[k.stateID], k.mapKey), nil
	case MultimapKeys:
		return t.mu.maps[k.addr].mapKeys(c.maps[k.stateID]), nil
	default:
		return t.mu.lists[k.addr].view(c.lists[k.stateID], k.rng), nil
	}
}

// Append buffers data, whole encoded elements, for the key. The Txn keeps
// a copy, never the caller's slice.
func (t *Txn) Append(key Key, data []byte) error {
	k, err := parseKey(key)
	if err != nil {
		return err
	}
	return t.append(k, data)
}

// Clear buffers the clearing of the key's state (of its range, for an
// ordered list).
func (t *Txn) Clear(key Key) error {
	k, err := parseKey(key)
	if err != nil {
		return err
	}
	return t.clear(k)
}

func (t *Txn) append(k stateKey, data []byte) error {
	var entries []entry
	if k.kind == OrderedList {
		var err error
		if entries, err = t.parseList(k, data); err != nil {
			return err
		}
	}
	data = append([]byte(nil), data...)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.mu.done {
		return errCommitted
	}
	switch k.kind {
	case Bag:
		t.bagLocked(k.addr).append(data)
	case Multimap:
		t.mapLocked(k.addr).key(k.mapKey).append(data)
	case MultimapKeys:
		return errors.New("userstate: cannot append to multimap keys state; append to a map key instead")
	default:
		t.listLocked(k.addr).add(entries)
	}
	return nil
}

// parseList finds the entries in an ordered-list append, keeping slices of
// a private copy of data so the request can be discarded.
func (t *Txn) parseList(k stateKey, data []byte) ([]entry, error) {
	if t.lookup == nil {
		return nil, fmt.Errorf("userstate: ordered list state %q of transform %q: no value coders known to this bundle", k.stateID, k.Transform)
	}
	codec, err := t.lookup(k.Transform, k.stateID)
	if err != nil {
		return nil, fmt.Errorf("userstate: ordered list state %q of transform %q: %w", k.stateID, k.Transform, err)
	}
	if codec == nil {
		return nil, fmt.Errorf("userstate: ordered list state %q of transform %q: no value coder", k.stateID, k.Transform)
	}
	entries, err := parseEntries(append([]byte(nil), data...), codec)
	if err != nil {
		return nil, fmt.Errorf("userstate: ordered list state %q of transform %q: %w", k.stateID, k.Transform, err)
	}
	return entries, nil
}

func (t *Txn) clear(k stateKey) error {
	if err := k.needRange(); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.mu.done {
		return errCommitted
	}
	switch k.kind {
	case Bag:
		t.bagLocked(k.addr).clear()
	case Multimap:
		t.mapLocked(k.addr).key(k.mapKey).clear()
	case MultimapKeys:
		t.mapLocked(k.addr).clearAll()
	default:
		t.listLocked(k.addr).clear(k.rng)
	}
	return nil
}

func (t *Txn) bagLocked(a addr) *bagDelta {
	d := t.mu.bags[a]
	if d == nil {
		d = &bagDelta{}
		t.mu.bags[a] = d
	}
	return d
}

func (t *Txn) mapLocked(a addr) *mapDelta {
	d := t.mu.maps[a]
	if d == nil {
		d = newMapDelta()
		t.mu.maps[a] = d
	}
	return d
}

func (t *Txn) listLocked(a addr) *listDelta {
	d := t.mu.lists[a]
	if d == nil {
		d = &listDelta{}
		t.mu.lists[a] = d
	}
	return d
}

// applyLocked writes every delta into the store; both locks are held.
// Cells and scopes left empty are deleted so the store holds live state only.
func (t *Txn) applyLocked(s *Store) {
	for a, d := range t.mu.bags {
		c := s.cellsLocked(a.Scope, true)
		setOrDelete(c.bags, a.stateID, d.apply(c.bags[a.stateID]))
		s.gcLocked(a.Scope)
	}
	for a, d := range t.mu.maps {
		c := s.cellsLocked(a.Scope, true)
		setOrDelete(c.maps, a.stateID, d.apply(c.maps[a.stateID]))
		s.gcLocked(a.Scope)
	}
	for a, d := range t.mu.lists {
		c := s.cellsLocked(a.Scope, true)
		setOrDelete(c.lists, a.stateID, d.apply(c.lists[a.stateID]))
		s.gcLocked(a.Scope)
	}
}

// cellValue is the committed value of any cell kind.
type cellValue interface {
	~[]entry | ~[][]byte | ~map[string][][]byte
}

// setOrDelete stores v, or deletes k when v is empty so empty cells vanish.
func setOrDelete[S cellValue](m map[string]S, k string, v S) {
	if len(v) == 0 {
		delete(m, k)
	} else {
		m[k] = v
	}
}
