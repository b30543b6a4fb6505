package agg

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// Snapshot format of a GroupByKey on the default-trigger fast path, for
// checkpoints. Equal states give equal bytes; RestoreGBK accepts exactly
// what Snapshot writes.
//
//	snapshot = magic version:uvarint wm:varint now:varint
//	           droppedLate:varint droppedClosed:varint count:uvarint window*
//	window   = win:bytes maxTS:varint hold:varint next:uvarint
//	           count:uvarint elem*              (windows sorted by win)
//	elem     = key:bytes value:bytes seq:uvarint held:byte [out:varint]
//	                                            (in arrival order)
//
// bytes is a uvarint length and the bytes; varint is zig-zag. The general
// state machine (other triggers, lateness, merging windows) and spilled
// windows are not snapshottable yet: Snapshot says so.
const (
	gbkSnapshotMagic   = "beam-runner/gbk"
	GBKSnapshotVersion = 1
)

// Snapshot returns the GroupByKey's state. Call it at a consistent point:
// after Fire has taken every pane.
func (g *GBK) Snapshot() ([]byte, error) {
	b := g.fast
	switch {
	case b == nil:
		return nil, errors.New("agg: snapshot of a GroupByKey with a non-default trigger, lateness or merging windows is not supported yet")
	case len(b.due) > 0:
		return nil, errors.New("agg: snapshot with fired panes not yet taken by Fire")
	}
	out := binary.AppendUvarint([]byte(gbkSnapshotMagic), GBKSnapshotVersion)
	out = binary.AppendVarint(binary.AppendVarint(out, g.wm), g.now)
	out = binary.AppendVarint(binary.AppendVarint(out, g.droppedLate), g.droppedClose)
	out = binary.AppendUvarint(out, uint64(len(b.wins)))
	for _, k := range slices.Sorted(maps.Keys(b.wins)) {
		w := b.wins[k]
		if w.spilled {
			return nil, errors.New("agg: snapshot of a GroupByKey with spilled windows is not supported yet")
		}
		out = appendBytes(out, w.win)
		out = binary.AppendVarint(binary.AppendVarint(out, w.maxTS), w.hold)
		out = binary.AppendUvarint(binary.AppendUvarint(out, uint64(w.next)), uint64(len(w.elems)))
		for _, e := range w.elems {
			out = binary.AppendUvarint(appendBytes(appendBytes(out, e.key), e.value), uint64(e.seq))
			if e.held {
				out = binary.AppendVarint(append(out, 1), e.out)
			} else {
				out = append(out, 0)
			}
		}
	}
	return out, nil
}

func appendBytes(b, v []byte) []byte { return append(binary.AppendUvarint(b, uint64(len(v))), v...) }

// RestoreGBK builds the GroupByKey cfg describes in the state a snapshot
// holds. A newer version, a configuration off the fast path, or bytes that
// are not exactly what Snapshot writes are refused with an error.
func RestoreGBK(cfg Config, snap []byte) (*GBK, error) {
	g, err := New(cfg)
	if err != nil {
		return nil, err
	}
	if g.fast == nil {
		return nil, errors.New("agg: restore of a GroupByKey off the default-trigger fast path is not supported yet")
	}
	if !bytes.HasPrefix(snap, []byte(gbkSnapshotMagic)) {
		return nil, errors.New("agg: not a GroupByKey snapshot")
	}
	d := &decoder{b: snap, off: len(gbkSnapshotMagic)}
	if v := d.uvarint(); d.err == nil && v != GBKSnapshotVersion {
		return nil, fmt.Errorf("agg: GroupByKey snapshot version %d, this build reads version %d", v, GBKSnapshotVersion)
	}
	g.wm, g.now, g.droppedLate, g.droppedClose = d.varint(), d.varint(), d.varint(), d.varint()
	var prev []byte
	for n := d.count(); n > 0 && d.err == nil; n-- {
		w := &batchWin{win: d.bytes()}
		if prev != nil && bytes.Compare(prev, w.win) >= 0 {
			d.fail("windows out of order")
		}
		prev = w.win
		w.maxTS, w.hold = d.varint(), d.varint()
		next := d.uvarint()
		if next > 1<<32-1 {
			d.fail("arrival number out of range")
		}
		w.next = uint32(next)
		for m := d.count(); m > 0 && d.err == nil; m-- {
			e := batchElem{key: d.bytes(), value: d.bytes()}
			e.prefix = keyPrefix(e.key)
			seq := d.uvarint()
			if seq >= next || (len(w.elems) > 0 && uint32(seq) <= w.elems[len(w.elems)-1].seq) {
				d.fail("arrival numbers out of order")
			}
			e.seq = uint32(seq)
			switch d.byte() {
			case 0:
			case 1:
				e.held, e.out = true, d.varint()
			default:
				d.fail("bad held flag")
			}
			w.elems = append(w.elems, e)
		}
		g.fast.wins[string(w.win)] = w
		g.fast.pending += len(w.elems)
	}
	if d.err == nil && d.off != len(snap) {
		d.fail("trailing bytes")
	}
	if d.err != nil {
		return nil, d.err
	}
	return g, nil
}

// decoder reads a snapshot, keeping the first error; it accepts only
// minimal varints, so each state has one encoding.
type decoder struct {
	b   []byte
	off int
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("agg: bad GroupByKey snapshot at byte %d: %s", d.off, what)
	}
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 || n != len(binary.AppendUvarint(nil, v)) {
		d.fail("malformed or non-minimal varint")
		return 0
	}
	d.off += n
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b[d.off:])
	if n <= 0 || n != len(binary.AppendVarint(nil, v)) {
		d.fail("malformed or non-minimal varint")
		return 0
	}
	d.off += n
	return v
}

// count reads a collection size no larger than the bytes left, so corrupt
// input cannot make restore allocate or loop without bound.
func (d *decoder) count() int {
	v := d.uvarint()
	if d.err == nil && v > uint64(len(d.b)-d.off) {
		d.fail("count larger than the snapshot")
		return 0
	}
	return int(v)
}

func (d *decoder) bytes() []byte {
	n := d.count()
	if d.err != nil {
		return nil
	}
	v := bytes.Clone(d.b[d.off : d.off+n])
	d.off += n
	return v
}

func (d *decoder) byte() byte {
	if d.err == nil && d.off >= len(d.b) {
		d.fail("truncated")
	}
	if d.err != nil {
		return 0
	}
	d.off++
	return d.b[d.off-1]
}
