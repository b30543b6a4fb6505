package userstate

// bagDelta is a bundle's pending writes to one bag (or to one multimap
// key's values): whether it cleared the committed pieces, and what it
// appended since.
type bagDelta struct {
	cleared bool
	pieces  [][]byte
}

func (d *bagDelta) append(p []byte) { d.pieces = append(d.pieces, p) }

func (d *bagDelta) clear() { *d = bagDelta{cleared: true} }

// view returns what a reader in the bundle sees over the committed pieces.
// Results are capped at their length so later appends to either side (which
// only ever write past that length) cannot show through.
func (d *bagDelta) view(committed [][]byte) [][]byte {
	if d == nil {
		return clip(committed)
	}
	if d.cleared {
		return clip(d.pieces)
	}
	if len(d.pieces) == 0 {
		return clip(committed)
	}
	if len(committed) == 0 {
		return clip(d.pieces)
	}
	out := make([][]byte, 0, len(committed)+len(d.pieces))
	return append(append(out, committed...), d.pieces...)
}

// nonEmpty reports whether view would return any piece, without building it.
func (d *bagDelta) nonEmpty(committed [][]byte) bool {
	if d == nil {
		return len(committed) > 0
	}
	return len(d.pieces) > 0 || (!d.cleared && len(committed) > 0)
}

// apply returns the committed pieces after the delta. A clear starts a new
// slice rather than truncating, so readers holding the old one are safe.
func (d *bagDelta) apply(committed [][]byte) [][]byte {
	if d.cleared {
		committed = nil
	}
	return append(committed, d.pieces...)
}

func clip(p [][]byte) [][]byte { return p[:len(p):len(p)] }
