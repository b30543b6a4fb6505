package coders

import (
	"errors"
	"math/bits"
)

// Errors shared by all parsers. They are sentinel values so that parsing a
// malformed element never allocates.
var (
	ErrShort    = errors.New("coders: truncated input")
	ErrOverflow = errors.New("coders: varint overflows 64 bits")
	ErrBadValue = errors.New("coders: malformed encoding")
)

// AppendUvarint appends v as an unsigned protobuf-style varint, the encoding
// Beam uses for lengths and counts.
func AppendUvarint(dst []byte, v uint64) []byte {
	for v >= 0x80 {
		dst = append(dst, byte(v)|0x80)
		v >>= 7
	}
	return append(dst, byte(v))
}

// Uvarint decodes an unsigned varint from the start of b, returning the value
// and the number of bytes read.
func Uvarint(b []byte) (uint64, int, error) {
	var v uint64
	for i := 0; i < len(b); i++ {
		if i == 10 {
			return 0, 0, ErrOverflow
		}
		c := b[i]
		if i == 9 && c > 1 {
			return 0, 0, ErrOverflow
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v, i + 1, nil
		}
	}
	return 0, 0, ErrShort
}

// AppendVarint appends v the way beam:coder:varint:v1 does: the two's
// complement bits reinterpreted as uint64 (not zig-zag), so negative values
// take 10 bytes.
func AppendVarint(dst []byte, v int64) []byte {
	return AppendUvarint(dst, uint64(v))
}

// Varint decodes a beam:coder:varint:v1 value.
func Varint(b []byte) (int64, int, error) {
	v, n, err := Uvarint(b)
	return int64(v), n, err
}

// UvarintLen returns how many bytes AppendUvarint would write for v; it lets
// callers size buffers before appending.
func UvarintLen(v uint64) int {
	return (bits.Len64(v|1) + 6) / 7
}

// lenPrefixed returns the total size of a varint length followed by that many
// bytes, rejecting lengths that run past the end of b.
func lenPrefixed(b []byte) (int, error) {
	l, n, err := Uvarint(b)
	if err != nil {
		return 0, err
	}
	if l > uint64(len(b)-n) {
		return 0, ErrShort
	}
	return n + int(l), nil
}

// LengthPrefixed splits a varint length-prefixed value (bytes, string_utf8,
// length_prefix) into its payload and the total bytes consumed.
func LengthPrefixed(b []byte) (payload []byte, n int, err error) {
	n, err = lenPrefixed(b)
	if err != nil {
		return nil, 0, err
	}
	_, h, _ := Uvarint(b)
	return b[h:n:n], n, nil
}

// AppendLengthPrefixed appends payload with a varint length prefix, the
// encoding of bytes, string_utf8 and length_prefix coders.
func AppendLengthPrefixed(dst, payload []byte) []byte {
	return append(AppendUvarint(dst, uint64(len(payload))), payload...)
}
