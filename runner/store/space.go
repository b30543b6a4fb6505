package store

import (
	"bytes"

	"github.com/cockroachdb/pebble/v2"
)

// Space is a key prefix of a Scratch (scratch.go) used as scratch space,
// such as a GroupByKey's spilled runs (it implements agg.Spill). Scratch
// is worthless after a crash: Open empties it, and owners remove their
// Scratch when done.
type Space struct {
	sc     *Scratch
	prefix []byte
}

// Space returns the space under prefix. Spaces whose prefixes do not
// prefix one another are disjoint.
func (x *Scratch) Space(prefix string) *Space { return &Space{sc: x, prefix: []byte(prefix)} }

// Space returns the space under prefix of the store's shared Scratch, made
// on first use and removed by Close: for users with no job to tie their
// scratch to (tests, tools). A job's spill goes to a Scratch of its own,
// whose space is given back when the job ends.
func (s *Store) Space(prefix string) *Space {
	s.smu.Lock()
	x := s.shared
	s.smu.Unlock()
	if x == nil {
		x = s.Scratch("shared")
		s.smu.Lock()
		if s.shared == nil {
			s.shared = x
		} else {
			delete(s.scratches, x) // another call made it first; x was never written
			x = s.shared
		}
		s.smu.Unlock()
	}
	return x.Space(prefix)
}

// WriteRun writes the pairs in one atomic batch. It fails, naming the
// cause, on a full disk (ENOSPC) and after a disk fault.
func (sp *Space) WriteRun(keys, values [][]byte) error {
	b, n := new(pebble.Batch), 0
	k := make([]byte, 0, 64)
	for i := range keys {
		k = append(append(k[:0], sp.prefix...), keys[i]...)
		_ = b.Set(k, values[i], nil)
		n += len(k) + len(values[i])
	}
	return sp.sc.write(b, n)
}

// Scan calls fn for every key of the space with the prefix, in order,
// with the space's prefix removed.
func (sp *Space) Scan(prefix []byte, fn func(key, value []byte) error) error {
	return sp.ScanFrom(prefix, nil, fn)
}

// ScanFrom is Scan from the first key at or after from (a key of the
// space, nil: the prefix's first).
func (sp *Space) ScanFrom(prefix, from []byte, fn func(key, value []byte) error) error {
	full := append(bytes.Clone(sp.prefix), prefix...)
	var start []byte
	if from != nil {
		start = append(bytes.Clone(sp.prefix), from...)
	}
	return sp.sc.do(func(db *pebble.DB) error {
		return scanReader(db, full, start, func(k, v []byte) error { return fn(k[len(sp.prefix):], v) })
	})
}

// DeletePrefix drops every key of the space with the prefix.
func (sp *Space) DeletePrefix(prefix []byte) error {
	full := append(bytes.Clone(sp.prefix), prefix...)
	end := prefixEnd(full)
	if end == nil {
		return nil
	}
	return sp.sc.do(func(db *pebble.DB) error { return db.DeleteRange(full, end, pebble.NoSync) })
}
