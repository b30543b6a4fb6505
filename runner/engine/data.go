// Package engine holds the runner's materialised PCollections and the
// runner-side transforms over them (impulse, flatten, group by key and
// window, side-input indexes), and cuts inputs into bundles. It does no I/O
// and reads no clock.
package engine

import (
	"fmt"

	"github.com/beam-runner/beam-runner/runner/coders"
)

// paneChunkBytes is the size of the chunks GBK output is encoded into: at
// most a data-plane frame, so bundles are cut into frames without parsing.
const paneChunkBytes = 1 << 20

// Data is a materialised PCollection: encoded windowed values, as chunks
// that each hold whole elements.
type Data struct {
	Chunks [][]byte
	Bytes  int
}

// Add appends a chunk of whole elements.
func (d *Data) Add(chunk []byte) {
	if len(chunk) == 0 {
		return
	}
	d.Chunks = append(d.Chunks, chunk)
	d.Bytes += len(chunk)
}

// AddAll appends another PCollection's chunks without copying them.
func (d *Data) AddAll(o *Data) {
	for _, c := range o.Chunks {
		d.Add(c)
	}
}

// Impulse is the single element an impulse emits: an empty byte array in
// the global window at the minimum timestamp.
func Impulse() *Data {
	d := &Data{}
	d.Add(coders.AppendWindowedValue(nil, coders.MinTimestamp, 1, nil, coders.NoFiringPane, []byte{0}))
	return d
}

// Split cuts the data into at most n bundles of roughly equal size, at
// element boundaries. Chunks are shared, not copied.
func Split(d *Data, wv *coders.WindowedValueCodec, n int) ([][][]byte, error) {
	if n <= 1 || d.Bytes == 0 {
		return [][][]byte{d.Chunks}, nil
	}
	target := (d.Bytes + n - 1) / n
	var bundles [][][]byte
	var cur [][]byte
	curBytes := 0
	flush := func() {
		if len(cur) > 0 {
			bundles = append(bundles, cur)
			cur, curBytes = nil, 0
		}
	}
	for _, c := range d.Chunks {
		for len(c) > 0 {
			room := target - curBytes
			if len(c) <= room {
				cur, curBytes = append(cur, c), curBytes+len(c)
				break
			}
			cut, err := boundaryAfter(c, room, wv)
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
	return bundles, nil
}

// boundaryAfter returns the end of the first element ending at or after
// offset want (at least one element).
func boundaryAfter(b []byte, want int, wv *coders.WindowedValueCodec) (int, error) {
	var v coders.WindowedValue
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

// Each calls f for every element of the data.
func Each(d *Data, wv *coders.WindowedValueCodec, f func(v *coders.WindowedValue) error) error {
	var v coders.WindowedValue
	for _, c := range d.Chunks {
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
func EachWindow(wv *coders.WindowedValueCodec, v *coders.WindowedValue, f func(win []byte) error) error {
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
func EachRaw(c []byte, wv *coders.WindowedValueCodec, f func(v *coders.WindowedValue, raw []byte) error) error {
	var v coders.WindowedValue
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
func Frames(chunks [][]byte, wv *coders.WindowedValueCodec, max int) ([][]byte, error) {
	var out [][]byte
	for _, c := range chunks {
		for len(c) > max {
			cut, err := boundaryAfter(c, max, wv)
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
func ElementsFrom(chunks [][]byte, wv *coders.WindowedValueCodec, i int) ([][]byte, error) {
	var out [][]byte
	n := 0
	for _, c := range chunks {
		err := EachRaw(c, wv, func(_ *coders.WindowedValue, raw []byte) error {
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
