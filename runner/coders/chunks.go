package coders

import "fmt"

// Chunks are runs of encoded windowed values, each holding whole elements:
// how the runner keeps a PCollection's data and a bundle's input. The
// functions here walk and cut them without decoding the elements.

// Split cuts chunks into at most n parts of roughly equal size, at element
// boundaries. Chunks are shared, not copied.
func Split(chunks [][]byte, wv *WindowedValueCodec, n int) ([][][]byte, error) {
	total := 0
	for _, c := range chunks {
		total += len(c)
	}
	if n <= 1 || total == 0 {
		return [][][]byte{chunks}, nil
	}
	target := (total + n - 1) / n
	var parts [][][]byte
	var cur [][]byte
	curBytes := 0
	flush := func() {
		if len(cur) > 0 {
			parts = append(parts, cur)
			cur, curBytes = nil, 0
		}
	}
	for _, c := range chunks {
		for len(c) > 0 {
			room := target - curBytes
			if len(c) <= room {
				cur, curBytes = append(cur, c), curBytes+len(c)
				break
			}
			cut, err := BoundaryAfter(c, room, wv)
			if err != nil {
				return nil, err
			}
			cur = append(cur, c[:cut])
			c = c[cut:]
			flush()
		}
		if curBytes >= target {
			flush()
		}
	}
	flush()
	return parts, nil
}

// BoundaryAfter returns the end of the first element ending at or after
// offset want (at least one element).
func BoundaryAfter(b []byte, want int, wv *WindowedValueCodec) (int, error) {
	var v WindowedValue
	off := 0
	for off < len(b) {
		n, err := wv.Parse(b[off:], &v)
		if err != nil {
			return 0, fmt.Errorf("parsing element at offset %d: %w", off, err)
		}
		off += n
		if off >= want {
			break
		}
	}
	return off, nil
}

// Each calls f for every element of the chunks.
func Each(chunks [][]byte, wv *WindowedValueCodec, f func(v *WindowedValue) error) error {
	var v WindowedValue
	for _, c := range chunks {
		for off := 0; off < len(c); {
			n, err := wv.Parse(c[off:], &v)
			if err != nil {
				return fmt.Errorf("parsing element at offset %d: %w", off, err)
			}
			if err := f(&v); err != nil {
				return err
			}
			off += n
		}
	}
	return nil
}

// EachWindow calls f once per window of the element, for exploding
// elements into their windows.
func EachWindow(wv *WindowedValueCodec, v *WindowedValue, f func(win []byte) error) error {
	rest := v.Windows
	for i := 0; i < v.NumWindows; i++ {
		win, r, err := wv.NextWindow(rest)
		if err != nil {
			return err
		}
		rest = r
		if err := f(win); err != nil {
			return err
		}
	}
	return nil
}

// EachRaw calls f for every element of one chunk with the element's bytes.
func EachRaw(c []byte, wv *WindowedValueCodec, f func(v *WindowedValue, raw []byte) error) error {
	var v WindowedValue
	for off := 0; off < len(c); {
		n, err := wv.Parse(c[off:], &v)
		if err != nil {
			return fmt.Errorf("parsing element at offset %d: %w", off, err)
		}
		if err := f(&v, c[off:off+n:off+n]); err != nil {
			return err
		}
		off += n
	}
	return nil
}

// Frames cuts chunks larger than max at element boundaries, so a data
// plane frame never ends inside an element.
func Frames(chunks [][]byte, wv *WindowedValueCodec, max int) ([][]byte, error) {
	var out [][]byte
	for _, c := range chunks {
		for len(c) > max {
			cut, err := BoundaryAfter(c, max, wv)
			if err != nil {
				return nil, err
			}
			out = append(out, c[:cut:cut])
			c = c[cut:]
		}
		if len(c) > 0 {
			out = append(out, c)
		}
	}
	return out, nil
}

// ElementsFrom returns each element at or after index i of the chunks, in
// order, as its own slice: the input a bundle gave back by a channel split.
func ElementsFrom(chunks [][]byte, wv *WindowedValueCodec, i int) ([][]byte, error) {
	var out [][]byte
	n := 0
	for _, c := range chunks {
		err := EachRaw(c, wv, func(_ *WindowedValue, raw []byte) error {
			if n >= i {
				out = append(out, raw)
			}
			n++
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
