package bundleio

import (
	"errors"
	"fmt"

	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/runner/plan"
)

// Codec is the wire codec of a PCollection a bundle reads or writes: it
// cuts the bundle's data at element boundaries.
type Codec struct{ wv *coders.WindowedValueCodec }

// CodecOf compiles the wire codec of the plan's PCollection pc.
func CodecOf(pl *plan.Plan, pc string) (Codec, error) {
	wv, err := pl.WireCodec(pc)
	return Codec{wv}, err
}

// Frames cuts a bundle's input chunks into data-plane frames of about
// frameBytes, at element boundaries.
func (c Codec) Frames(chunks [][]byte, frameBytes int) ([][]byte, error) {
	return coders.Frames(chunks, c.wv, frameBytes)
}

// Count is how many elements chunks hold.
func (c Codec) Count(chunks [][]byte) int64 {
	n := int64(0)
	for _, ch := range chunks {
		coders.EachRaw(ch, c.wv, func(_ *coders.WindowedValue, _ []byte) error { n++; return nil })
	}
	return n
}

// Span is how many elements chunks hold and the least and greatest of
// their event times (both 0 when there are none).
func (c Codec) Span(chunks [][]byte) (n, minTS, maxTS int64) {
	for _, ch := range chunks {
		coders.EachRaw(ch, c.wv, func(v *coders.WindowedValue, _ []byte) error {
			if n == 0 || v.Timestamp < minTS {
				minTS = v.Timestamp
			}
			if n == 0 || v.Timestamp > maxTS {
				maxTS = v.Timestamp
			}
			n++
			return nil
		})
	}
	return n, minTS, maxTS
}

// Chunks turns a stream's frames into chunks of whole elements without
// copying them where they already are: only frames an element spans are
// joined. The engine keeps chunks by reference (a GroupByKey does until
// it fires), so a copy of every output would double what a bundle's
// output costs while it is committed.
func (c Codec) Chunks(frames [][]byte) [][]byte {
	out := make([][]byte, 0, len(frames))
	var carry []byte
	for i, f := range frames {
		if carry != nil {
			carry = append(carry, f...)
		} else if c.endsWhole(f) {
			out = append(out, f)
			frames[i] = nil
			continue
		} else {
			carry = append(make([]byte, 0, 2*len(f)), f...)
		}
		frames[i] = nil
		if c.endsWhole(carry) {
			out = append(out, carry)
			carry = nil
		}
	}
	if carry != nil {
		out = append(out, carry) // truncated: the engine reports it
	}
	return out
}

// endsWhole reports whether b ends at an element boundary. Malformed data
// counts as whole, for the engine to report where it is.
func (c Codec) endsWhole(b []byte) bool {
	var v coders.WindowedValue
	for off := 0; off < len(b); {
		n, err := c.wv.Parse(b[off:], &v)
		if err != nil {
			return !errors.Is(err, coders.ErrShort)
		}
		off += n
	}
	return true
}

// Codecs are the wire codecs of the PCollections SDK stages write,
// compiled once per job; not safe for concurrent use.
type Codecs struct {
	pl *plan.Plan
	m  map[string]Codec
}

// NewCodecs caches the wire codecs of pl's PCollections.
func NewCodecs(pl *plan.Plan) *Codecs { return &Codecs{pl: pl, m: map[string]Codec{}} }

// Of is the wire codec of PCollection pc.
func (cs *Codecs) Of(pc string) (Codec, error) {
	if c, ok := cs.m[pc]; ok {
		return c, nil
	}
	c, err := CodecOf(cs.pl, pc)
	if err != nil {
		return Codec{}, fmt.Errorf("PCollection %q: %w", pc, err)
	}
	cs.m[pc] = c
	return c, nil
}

// Join concatenates a stream's frames: elements may span frames. It drops
// each frame from the slice once copied, so a large output is held about
// once, not twice, while it is joined.
func Join(frames [][]byte) []byte {
	if len(frames) == 1 {
		return frames[0]
	}
	n := 0
	for _, f := range frames {
		n += len(f)
	}
	b := make([]byte, 0, n)
	for i, f := range frames {
		b = append(b, f...)
		frames[i] = nil
	}
	return b
}
