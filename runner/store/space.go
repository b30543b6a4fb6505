package store

import "bytes"

// Space is a key prefix of the store used as scratch space, such as a
// GroupByKey's spilled runs (it implements agg.Spill). Its writes are not
// synced: scratch is worthless after a crash, and the owner drops it.
type Space struct {
	s      *Store
	prefix []byte
}

// Space returns the scratch space under prefix. Spaces whose prefixes do
// not prefix one another are disjoint.
func (s *Store) Space(prefix string) *Space { return &Space{s: s, prefix: []byte(prefix)} }

// WriteRun writes the pairs in one atomic batch.
func (sp *Space) WriteRun(keys, values [][]byte) error {
	b := sp.s.NewBatch()
	k := make([]byte, 0, 64)
	for i := range keys {
		k = append(append(k[:0], sp.prefix...), keys[i]...)
		b.Set(k, values[i])
	}
	return b.Commit(false)
}

// Scan calls fn for every key of the space with the prefix, in order,
// with the space's prefix removed.
func (sp *Space) Scan(prefix []byte, fn func(key, value []byte) error) error {
	full := append(bytes.Clone(sp.prefix), prefix...)
	return sp.s.Scan(full, func(k, v []byte) error { return fn(k[len(sp.prefix):], v) })
}

// DeletePrefix drops every key of the space with the prefix.
func (sp *Space) DeletePrefix(prefix []byte) error {
	b := sp.s.NewBatch()
	b.DeletePrefix(append(bytes.Clone(sp.prefix), prefix...))
	return b.Commit(false)
}
