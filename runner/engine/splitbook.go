package engine

import (
	"fmt"

	"github.com/beam-runner/beam-runner/runner/coders"
)

// SplitResult is what a running bundle gave up by one split, as its SDK
// reported it.
//
// A bundle may be split many times. Each split only ever shrinks what the
// bundle keeps: the SDK keeps input elements before FirstResidual (the
// last of them possibly only in part, as Primary) and gives up the rest.
// Elements the bundle gave up by an earlier split are not given up again,
// so the engine remembers how far the bundle still owns its input.
type SplitResult struct {
	// FirstResidual is the index of the first input element the bundle
	// gave up whole (its channel split); -1 when the SDK reported none.
	FirstResidual int
	// Primary is what the bundle keeps of the element it split (the one
	// before FirstResidual), as encoded input elements; empty if none.
	Primary [][]byte
	// Residuals are the unprocessed parts of split elements.
	Residuals []Residual
	// Checkpoint says the split asked the bundle to keep none of its
	// remaining work.
	Checkpoint bool
}

// splitBook is a bundle's record of the splits applied to it.
type splitBook struct {
	// owned is how many leading input elements the bundle still owns;
	// -1 until a split with a channel split arrives. left is the encoded
	// size of those past where that split found the bundle (readBefore):
	// the split policy's measure (split.go).
	owned, left int
	// keep is the fraction of its remaining work the split policy last
	// asked the bundle to keep.
	keep float64
	// primaryAt is the index of the element the bundle keeps only in part
	// (-1 for none), and primary that part.
	primaryAt int
	primary   [][]byte
	// opaque: a split gave up work without a channel split, so what the
	// bundle still owns is unknown.
	opaque bool
}

func newSplitBook() splitBook { return splitBook{owned: -1, primaryAt: -1} }

// ApplySplit files what a running bundle gave up to run in other bundles;
// the bundle itself is still committed later as usual. It returns how many
// residuals it filed or, for a checkpoint's, holds until the bundle
// commits. A split that gives up input an earlier split already
// gave up is refused: running it twice would duplicate data.
func (e *Engine) ApplySplit(id int, s SplitResult) (int, error) {
	defer e.checkInvariants("ApplySplit")
	b := e.flight[id]
	if b == nil {
		return 0, fmt.Errorf("split of unknown bundle %d", id)
	}
	st := e.flow.stage(b.Stage)
	rest, err := b.takeChannelResiduals(e.flow.pcolls[st.spec.Inputs[0]].spec.Codec, s)
	if err != nil {
		return 0, fmt.Errorf("stage %s, bundle %d: %w", b.Stage, id, err)
	}
	rs := rest
	if s.Checkpoint && st.spec.Splittable {
		// A checkpoint's residual restriction waits for its bundle to
		// end: until then the bundle still reads what the restriction
		// continues (a Kafka partition, say), and some sources refuse a
		// second reader at once (KafkaIO's cached consumer did). The
		// bundle stops at its next claim, so the wait is short, and its
		// input holds the watermark meanwhile.
		b.held = append(b.held, s.Residuals...)
	} else {
		rs = append(rs, s.Residuals...)
	}
	if err := e.flow.deferResiduals(st, rs); err != nil {
		e.flow.fail(err)
		return 0, err
	}
	e.flow.recompute()
	return len(rest) + len(s.Residuals), e.flow.err
}

// takeChannelResiduals returns the input elements a channel split gave up
// that the bundle still owned, and records the split.
func (b *bundle) takeChannelResiduals(wv *coders.WindowedValueCodec, s SplitResult) ([]Residual, error) {
	if s.FirstResidual < 0 {
		// Residuals (with or without the primary kept) but no channel
		// split: the SDK gave up part of an element without saying which.
		// The residuals run elsewhere; what the bundle still owns is
		// unknown, so it cannot be retried (retry.go).
		b.split.opaque = b.split.opaque || len(s.Residuals) > 0 || len(s.Primary) > 0
		return nil, nil
	}
	owned, err := b.ownedByIndex(wv)
	if err != nil {
		return nil, err
	}
	if s.FirstResidual > len(owned) && len(s.Primary) == 0 && len(s.Residuals) == 0 {
		// A channel split past what the bundle owns gives nothing up: the
		// Go SDK sends one (PI = its index, RI = index+1) when it has
		// finished its owned input and a sub-element split finds nothing
		// left to split. Nothing is filed, so nothing runs twice.
		return nil, nil
	}
	if s.FirstResidual > len(owned) {
		return nil, fmt.Errorf("split gave up input from element %d, but the bundle owns only %d elements (earlier splits gave up the rest)", s.FirstResidual, len(owned))
	}
	if len(s.Primary) > 0 && s.FirstResidual == 0 {
		return nil, fmt.Errorf("split kept a primary but gave up every input element")
	}
	var out []Residual
	for _, parts := range owned[s.FirstResidual:] {
		for _, el := range parts {
			out = append(out, Residual{Element: el})
		}
	}
	b.split.owned = s.FirstResidual
	if len(s.Primary) > 0 {
		b.split.primaryAt, b.split.primary = s.FirstResidual-1, s.Primary
	} else if b.split.primaryAt >= s.FirstResidual {
		b.split.primaryAt, b.split.primary = -1, nil
	}
	b.split.left = keptBytes(owned[b.split.readBefore(len(owned), s):s.FirstResidual], s.Primary)
	return out, nil
}

// readBefore estimates how many of the n input elements the bundle owned
// it had read when a split kept those before s.FirstResidual: asked to
// keep the fraction keep of what remained, the SDK splits at about
// read + keep*(n-read). 0 when unknown: no fraction asked, or a split of
// an element (a primary), whose read part is not in its bytes.
func (sb splitBook) readBefore(n int, s SplitResult) int {
	f := sb.keep
	if f <= 0 || f >= 1 || len(s.Primary) > 0 {
		return 0
	}
	read := (float64(s.FirstResidual) - f*float64(n)) / (1 - f)
	return max(min(int(read), s.FirstResidual-1), 0)
}

// keptBytes is the encoded size of the elements a split kept, the last of
// them as primary when the split kept one.
func keptBytes(kept [][][]byte, primary [][]byte) int {
	n := 0
	for i, parts := range kept {
		if i == len(kept)-1 && len(primary) > 0 {
			parts = primary
		}
		for _, p := range parts {
			n += len(p)
		}
	}
	return n
}

// ownedByIndex lists, per input element index, what the bundle still owns
// of it: the whole element, or the primary parts of the element it split.
func (b *bundle) ownedByIndex(wv *coders.WindowedValueCodec) ([][][]byte, error) {
	all, err := coders.ElementsFrom(b.Input, wv, 0)
	if err != nil {
		return nil, err
	}
	if b.split.owned >= 0 && b.split.owned < len(all) {
		all = all[:b.split.owned]
	}
	out := make([][][]byte, len(all))
	for i, el := range all {
		out[i] = [][]byte{el}
	}
	if p := b.split.primaryAt; p >= 0 && p < len(out) {
		out[p] = b.split.primary
	}
	return out, nil
}

// ownedInput is the input a bundle still owns after its splits, as whole
// encoded elements: what a retry of the bundle must process.
func (e *Engine) ownedInput(id int) ([][]byte, error) {
	b := e.flight[id]
	if b == nil {
		return nil, fmt.Errorf("unknown bundle %d", id)
	}
	if b.split.owned < 0 && b.split.primaryAt < 0 {
		return b.Input, nil
	}
	owned, err := b.ownedByIndex(e.flow.pcolls[e.flow.stage(b.Stage).spec.Inputs[0]].spec.Codec)
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for _, parts := range owned {
		out = append(out, parts...)
	}
	return out, nil
}
