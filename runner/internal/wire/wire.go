// Package wire is the explicit binary encoding of the engine's and the user
// state's snapshots: a flat
// sequence of varints, zig-zag signed varints, booleans and length-prefixed
// byte strings, written and read in the same order by hand-written code.
// There is no reflection and no self-description, so the format is exactly
// what the snapshot code says; a version number written first by the caller
// decides how to read the rest.
//
// A Reader never panics on malformed input: the first problem (truncation,
// an absurd length) is kept as its error and every later read returns zero
// values, so decoders check Err once per section.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Writer appends fields to a buffer.
type Writer struct{ buf []byte }

// Bytes returns what was written.
func (w *Writer) Bytes() []byte { return w.buf }

// Uint writes an unsigned varint.
func (w *Writer) Uint(v uint64) { w.buf = binary.AppendUvarint(w.buf, v) }

// Int writes a signed (zig-zag) varint.
func (w *Writer) Int(v int64) { w.buf = binary.AppendVarint(w.buf, v) }

// Len writes a count of items that follow.
func (w *Writer) Len(n int) { w.Uint(uint64(n)) }

// Bool writes one byte, 0 or 1.
func (w *Writer) Bool(b bool) {
	if b {
		w.buf = append(w.buf, 1)
	} else {
		w.buf = append(w.buf, 0)
	}
}

// Blob writes a length-prefixed byte string.
func (w *Writer) Blob(b []byte) {
	w.Len(len(b))
	w.buf = append(w.buf, b...)
}

// String writes a length-prefixed string.
func (w *Writer) String(s string) {
	w.Len(len(s))
	w.buf = append(w.buf, s...)
}

// Reader reads fields in the order a Writer wrote them.
type Reader struct {
	buf []byte
	off int
	err error
	// Version is the format version of what is read, for fields that
	// only some versions have; its user sets it from the header.
	Version uint64
}

// NewReader reads b; the byte strings it returns are copies.
func NewReader(b []byte) *Reader { return &Reader{buf: b} }

// ErrTruncated reports a snapshot that ends inside a field.
var ErrTruncated = errors.New("snapshot truncated")

// Err is the first error met, nil if none.
func (r *Reader) Err() error { return r.err }

// Failf records a decoding error found by the caller (a value out of
// range), naming the field; the first error wins.
func (r *Reader) Failf(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf(format, args...)
	}
}

// Done reports an error unless every byte was read.
func (r *Reader) Done() error {
	if r.err == nil && r.off != len(r.buf) {
		r.err = fmt.Errorf("snapshot has %d trailing bytes", len(r.buf)-r.off)
	}
	return r.err
}

// Uint reads an unsigned varint.
func (r *Reader) Uint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.buf[r.off:])
	if n <= 0 {
		r.fail(n)
		return 0
	}
	r.off += n
	return v
}

// Int reads a signed varint.
func (r *Reader) Int() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.buf[r.off:])
	if n <= 0 {
		r.fail(n)
		return 0
	}
	r.off += n
	return v
}

func (r *Reader) fail(n int) {
	if n == 0 {
		r.err = fmt.Errorf("at byte %d: %w", r.off, ErrTruncated)
	} else {
		r.err = fmt.Errorf("at byte %d: varint overflows 64 bits", r.off)
	}
}

// Len reads a count of items; a count larger than the bytes left (every
// item takes at least one byte) is an error, so a corrupt count cannot
// make the caller allocate without bound.
func (r *Reader) Len() int {
	v := r.Uint()
	if r.err == nil && v > uint64(len(r.buf)-r.off) {
		r.err = fmt.Errorf("at byte %d: count %d exceeds the %d bytes left: %w", r.off, v, len(r.buf)-r.off, ErrTruncated)
		return 0
	}
	return int(v)
}

// Bool reads one byte that must be 0 or 1.
func (r *Reader) Bool() bool {
	if r.err != nil {
		return false
	}
	if r.off >= len(r.buf) {
		r.fail(0)
		return false
	}
	b := r.buf[r.off]
	if b > 1 {
		r.err = fmt.Errorf("at byte %d: boolean is %d", r.off, b)
		return false
	}
	r.off++
	return b == 1
}

// Blob reads a length-prefixed byte string (a copy; nil when empty).
func (r *Reader) Blob() []byte {
	n := r.Len()
	if r.err != nil || n == 0 {
		return nil
	}
	b := append([]byte(nil), r.buf[r.off:r.off+n]...)
	r.off += n
	return b
}

// String reads a length-prefixed string.
func (r *Reader) String() string {
	n := r.Len()
	if r.err != nil {
		return ""
	}
	s := string(r.buf[r.off : r.off+n])
	r.off += n
	return s
}

// Num writes a non-negative int that is not a count (an index, an offset).
func (w *Writer) Num(n int) { w.Uint(uint64(n)) }

// Raw appends bytes already encoded, such as a piece of another Writer's.
func (w *Writer) Raw(b []byte) { w.buf = append(w.buf, b...) }

// Num reads a non-negative int written by Writer.Num.
func (r *Reader) Num() int {
	v := r.Uint()
	if r.err == nil && v > 1<<62 {
		r.err = fmt.Errorf("at byte %d: number %d out of range", r.off, v)
		return 0
	}
	return int(v)
}
