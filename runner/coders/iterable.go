package coders

import (
	"encoding/binary"
	"errors"
)

// ErrNotKV is returned by SplitKV on a Codec that is not beam:coder:kv:v1.
var ErrNotKV = errors.New("coders: codec is not a KV coder")

// AppendIterableHeader appends the element count of a fully known iterable
// (big-endian int32), as beam:coder:iterable:v1 writes it. The n encoded
// elements follow it directly; GBK outputs are built this way.
func AppendIterableHeader(dst []byte, n int32) []byte {
	return binary.BigEndian.AppendUint32(dst, uint32(n))
}

// IterableHeader decodes an iterable's count. A count of -1 means the
// chunked form follows: varint chunk sizes, each followed by that many
// elements, terminated by a 0 chunk size.
func IterableHeader(b []byte) (count int32, n int, err error) {
	c, err := int32Count(b)
	if err != nil {
		return 0, 0, err
	}
	if c < -1 {
		return 0, 0, ErrBadValue
	}
	return c, 4, nil
}

// iterableLen measures an iterable in either the counted or chunked form.
func iterableLen(b []byte, elem *Codec) (int, error) {
	count, off, err := IterableHeader(b)
	if err != nil {
		return 0, err
	}
	if count >= 0 {
		n, err := countedLen(b[off:], int(count), elem)
		return off + n, err
	}
	return chunkedLen(b, off, elem)
}

// chunkedLen measures the chunks of an iterable whose size was unknown when
// it was written (Java writes large iterables this way), possibly ending in
// a state token for the rest (the runner's own hot keys).
func chunkedLen(b []byte, off int, elem *Codec) (int, error) {
	for {
		chunk, n, err := Varint(b[off:])
		if err != nil {
			return 0, err
		}
		off += n
		if chunk == 0 {
			return off, nil
		}
		if chunk == -1 {
			// The rest is state-backed: a length-prefixed token ends it.
			_, n, err := LengthPrefixed(b[off:])
			if err != nil {
				return 0, err
			}
			return off + n, nil
		}
		if chunk < 0 {
			return 0, ErrBadValue
		}
		l, err := countedLen(b[off:], int(chunk), elem)
		if err != nil {
			return 0, err
		}
		off += l
	}
}

// EachInIterable calls f with every encoded element of the iterable at the
// start of b, in either form, and returns the iterable's size. A
// state-backed rest is refused: only runner-built iterables carry one.
func EachInIterable(b []byte, elem *Codec, f func(e []byte) error) (int, error) {
	count, off, err := IterableHeader(b)
	if err != nil {
		return 0, err
	}
	if count >= 0 {
		return eachCounted(b, off, int(count), elem, f)
	}
	for {
		chunk, n, err := Varint(b[off:])
		if err != nil {
			return 0, err
		}
		off += n
		switch {
		case chunk == 0:
			return off, nil
		case chunk < 0:
			return 0, ErrBadValue
		}
		if off, err = eachCounted(b, off, int(chunk), elem, f); err != nil {
			return 0, err
		}
	}
}

// eachCounted calls f with the n elements starting at off and returns the
// offset after them.
func eachCounted(b []byte, off, n int, elem *Codec, f func(e []byte) error) (int, error) {
	for range n {
		l, err := elem.Len(b[off:])
		if err != nil {
			return 0, err
		}
		if err := f(b[off : off+l : off+l]); err != nil {
			return 0, err
		}
		off += l
	}
	return off, nil
}
