package coders

import "encoding/binary"

type kind uint8

const (
	kLengthPrefixed kind = iota // bytes, string_utf8, length_prefix
	kVarint
	kBool
	kDouble
	kGlobalWindow
	kIntervalWindow
	kKV
	kIterable
	kNullable
	kWindowedValue
	kParamWindowedValue
	kTimer
	kShardedKey
	kCustomWindow // max timestamp, then the window in its own coder
)

// Codec measures and splits encoded values of one compiled coder. It is
// immutable after Compile and safe for concurrent use; its methods never
// allocate, so they can run per element.
type Codec struct {
	id, urn string
	kind    kind
	fixed   int // size of every value, or -1 when sizes vary
	comps   []*Codec
}

// ID is the coder id the Codec was compiled from.
func (c *Codec) ID() string { return c.id }

// URN is the coder's URN.
func (c *Codec) URN() string { return c.urn }

// FixedSize is the size of every encoded value, or -1 if sizes vary.
func (c *Codec) FixedSize() int { return c.fixed }

// Component returns the i-th compiled sub-coder (nil for length prefixes,
// whose payload coder is opaque).
func (c *Codec) Component(i int) *Codec {
	if c == nil || i < 0 || i >= len(c.comps) {
		return nil
	}
	return c.comps[i]
}

// Len returns the size of the encoded value at the start of b.
func (c *Codec) Len(b []byte) (int, error) {
	if c.fixed >= 0 {
		if len(b) < c.fixed {
			return 0, ErrShort
		}
		return c.fixed, nil
	}
	switch c.kind {
	case kLengthPrefixed:
		return lenPrefixed(b)
	case kVarint:
		_, n, err := Uvarint(b)
		return n, err
	case kIntervalWindow:
		_, n, err := DecodeIntervalWindow(b)
		return n, err
	case kKV:
		return c.seqLen(b, c.comps[0], c.comps[1])
	case kIterable:
		n, err := iterableLen(b, c.comps[0])
		if err != nil {
			return 0, err
		}
		return n, nil
	case kNullable:
		return c.nullableLen(b)
	case kWindowedValue:
		return windowedValueLen(b, c.comps[0], c.comps[1])
	case kParamWindowedValue:
		return c.comps[0].Len(b)
	case kTimer:
		return timerLen(b, c.comps[0], c.comps[1])
	case kShardedKey:
		return c.shardedKeyLen(b)
	case kCustomWindow:
		if len(b) < TimestampSize {
			return 0, ErrShort
		}
		n, err := c.comps[0].Len(b[TimestampSize:])
		return TimestampSize + n, err
	}
	return 0, ErrBadValue
}

// seqLen measures two values encoded back to back.
func (c *Codec) seqLen(b []byte, first, second *Codec) (int, error) {
	n1, err := first.Len(b)
	if err != nil {
		return 0, err
	}
	n2, err := second.Len(b[n1:])
	if err != nil {
		return 0, err
	}
	return n1 + n2, nil
}

func (c *Codec) nullableLen(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, ErrShort
	}
	switch b[0] {
	case 0:
		return 1, nil
	case 1:
		n, err := c.comps[0].Len(b[1:])
		if err != nil {
			return 0, err
		}
		return 1 + n, nil
	}
	return 0, ErrBadValue
}

// shardedKeyLen measures beam:coder:sharded_key:v1: a length-prefixed shard
// id followed by the key.
func (c *Codec) shardedKeyLen(b []byte) (int, error) {
	n1, err := lenPrefixed(b)
	if err != nil {
		return 0, err
	}
	n2, err := c.comps[0].Len(b[n1:])
	if err != nil {
		return 0, err
	}
	return n1 + n2, nil
}

// SplitKV splits an encoded KV at the start of b into its encoded key and
// value, returning slices of b and the total bytes consumed.
func (c *Codec) SplitKV(b []byte) (key, value []byte, n int, err error) {
	if c.kind != kKV {
		return nil, nil, 0, ErrNotKV
	}
	nk, err := c.comps[0].Len(b)
	if err != nil {
		return nil, nil, 0, err
	}
	nv, err := c.comps[1].Len(b[nk:])
	if err != nil {
		return nil, nil, 0, err
	}
	n = nk + nv
	return b[:nk:nk], b[nk:n:n], n, nil
}

// countedLen measures n consecutive values of elem.
func countedLen(b []byte, n int, elem *Codec) (int, error) {
	if elem.fixed >= 0 {
		if elem.fixed > 0 && n > len(b)/elem.fixed {
			return 0, ErrShort
		}
		return n * elem.fixed, nil
	}
	off := 0
	for i := 0; i < n; i++ {
		l, err := elem.Len(b[off:])
		if err != nil {
			return 0, err
		}
		off += l
	}
	return off, nil
}

// int32Count reads the big-endian int32 count that prefixes iterables and
// window lists.
func int32Count(b []byte) (int32, error) {
	if len(b) < 4 {
		return 0, ErrShort
	}
	return int32(binary.BigEndian.Uint32(b)), nil
}
