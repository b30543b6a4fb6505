package wire

import (
	"errors"
	"math"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	var w Writer
	w.Uint(math.MaxUint64)
	w.Int(math.MinInt64)
	w.Int(-1)
	w.Bool(true)
	w.Bool(false)
	w.Blob([]byte("abc"))
	w.Blob(nil)
	w.String("héllo")
	w.Len(2)
	w.Num(1 << 40)
	r := NewReader(w.Bytes())
	if v := r.Uint(); v != math.MaxUint64 {
		t.Errorf("Uint = %d", v)
	}
	if v := r.Int(); v != math.MinInt64 {
		t.Errorf("Int = %d", v)
	}
	if v := r.Int(); v != -1 {
		t.Errorf("Int = %d", v)
	}
	if a, b := r.Bool(), r.Bool(); !a || b {
		t.Errorf("Bool = %v %v", a, b)
	}
	if b := r.Blob(); string(b) != "abc" {
		t.Errorf("Blob = %q", b)
	}
	if b := r.Blob(); b != nil {
		t.Errorf("empty Blob = %q", b)
	}
	if s := r.String(); s != "héllo" {
		t.Errorf("String = %q", s)
	}
	if n, m := r.Len(), r.Num(); n != 2 || m != 1<<40 {
		t.Errorf("Len, Num = %d, %d", n, m)
	}
	if err := r.Done(); err != nil {
		t.Fatal(err)
	}
}

// Malformed input sets the reader's error (the first one wins) and later
// reads return zero values; nothing panics.
func TestMalformed(t *testing.T) {
	for name, c := range map[string]struct {
		b    []byte
		read func(r *Reader)
	}{
		"truncated varint": {[]byte{0x80}, func(r *Reader) { r.Uint() }},
		"overlong varint":  {[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, func(r *Reader) { r.Int() }},
		"bool of 2":        {[]byte{2}, func(r *Reader) { r.Bool() }},
		"bool past end":    {nil, func(r *Reader) { r.Bool() }},
		"count past end":   {[]byte{5, 1}, func(r *Reader) { r.Len() }},
		"blob past end":    {[]byte{3, 'a'}, func(r *Reader) { r.Blob() }},
		"string past end":  {[]byte{9}, func(r *Reader) { _ = r.String() }},
		"huge number":      {[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, func(r *Reader) { r.Num() }},
		"trailing bytes":   {[]byte{1, 2}, func(r *Reader) { r.Uint() }},
	} {
		r := NewReader(c.b)
		c.read(r)
		if r.Done() == nil {
			t.Errorf("%s: no error", name)
		}
		first := r.Err()
		if v := r.Uint(); v != 0 || r.Err() != first {
			t.Errorf("%s: read after an error gave %d, error %v", name, v, r.Err())
		}
	}
	r := NewReader([]byte{3, 'a'})
	r.Blob()
	if !errors.Is(r.Err(), ErrTruncated) {
		t.Errorf("truncated blob: %v, want ErrTruncated", r.Err())
	}
}
