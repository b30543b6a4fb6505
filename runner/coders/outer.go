package coders

import (
	"fmt"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
)

// NestedFromOuter converts v, one value of SDK coder sdk encoded in Beam's
// outer context (the value is the whole byte string, as Java and Python
// encode TestStream elements), into its nested encoding under wire: sdk
// with the parts the runner does not know wrapped in length prefixes, the
// form elements take inside windowed values. In the outer context bytes and
// strings drop their length prefix, a KV's value is itself outer, and a
// coder the runner wraps is encoded whole, so its wrap is the length of
// what is left.
func NestedFromOuter(coders map[string]*pipepb.Coder, sdk, wire string, v []byte) ([]byte, error) {
	out, err := nestedFromOuter(coders, sdk, wire, v, 0)
	if err != nil {
		return nil, err
	}
	c, err := Compile(coders, wire)
	if err != nil {
		return nil, err
	}
	if n, err := c.Len(out); err != nil || n != len(out) {
		return nil, fmt.Errorf("coders: value %x does not decode as coder %q in the outer context", v, sdk)
	}
	return out, nil
}

func nestedFromOuter(coders map[string]*pipepb.Coder, sdk, wire string, v []byte, depth int) ([]byte, error) {
	if depth > 50 {
		return nil, fmt.Errorf("coders: coder %q nests too deeply", sdk)
	}
	s, w := coders[sdk], coders[wire]
	if s == nil || w == nil {
		return nil, fmt.Errorf("coders: coder %q or %q not found", sdk, wire)
	}
	urn := w.GetSpec().GetUrn()
	if sdk != wire && urn == URNLengthPrefix && len(w.GetComponentCoderIds()) == 1 && w.GetComponentCoderIds()[0] == sdk {
		return AppendLengthPrefixed(nil, v), nil // the runner's wrap of a coder it does not know
	}
	if s.GetSpec().GetUrn() != urn || len(s.GetComponentCoderIds()) != len(w.GetComponentCoderIds()) {
		return nil, fmt.Errorf("coders: wire coder %q does not match SDK coder %q", wire, sdk)
	}
	sc, wc := s.GetComponentCoderIds(), w.GetComponentCoderIds()
	switch urn {
	case URNBytes, URNStringUTF8:
		return AppendLengthPrefixed(nil, v), nil
	case URNKV:
		// The key is nested even here; it can be measured only if known.
		if sc[0] != wc[0] {
			return nil, fmt.Errorf("coders: KV key coder %q is unknown to the runner; its outer encoding cannot be split", sc[0])
		}
		key, err := Compile(coders, wc[0])
		if err != nil {
			return nil, err
		}
		n, err := key.Len(v)
		if err != nil {
			return nil, fmt.Errorf("coders: KV key: %w", err)
		}
		val, err := nestedFromOuter(coders, sc[1], wc[1], v[n:], depth+1)
		if err != nil {
			return nil, err
		}
		return append(append([]byte(nil), v[:n]...), val...), nil
	case URNNullable:
		if len(v) > 0 && v[0] == 1 {
			val, err := nestedFromOuter(coders, sc[0], wc[0], v[1:], depth+1)
			if err != nil {
				return nil, err
			}
			return append([]byte{1}, val...), nil
		}
		return v, nil
	case URNShardedKey:
		n, err := lenPrefixed(v)
		if err != nil {
			return nil, fmt.Errorf("coders: sharded key shard id: %w", err)
		}
		key, err := nestedFromOuter(coders, sc[0], wc[0], v[n:], depth+1)
		if err != nil {
			return nil, err
		}
		return append(append([]byte(nil), v[:n]...), key...), nil
	}
	// Every other coder encodes alike in both contexts.
	return v, nil
}

// OuterSplittable reports whether NestedFromOuter can convert values of
// SDK coder sdk to its wire form (LPUnknown of sdk). It cannot where a KV's
// key holds a coder the runner does not know: the key is nested, so its
// end is unknown, and the runner cannot wrap it in a length prefix. Such
// values can still cross whole, as the inner value of a length prefix
// (Java's and Python's length prefix encodes its inner value in the outer
// context), for an SDK to re-encode.
func OuterSplittable(coders map[string]*pipepb.Coder, sdk string) bool {
	return outerSplittable(coders, sdk, 0)
}

func outerSplittable(coders map[string]*pipepb.Coder, id string, depth int) bool {
	c := coders[id]
	if c == nil || depth > 50 {
		return false
	}
	sub := c.GetComponentCoderIds()
	switch urn := c.GetSpec().GetUrn(); {
	case urn == URNLengthPrefix || !Known(urn):
		return true // framed, or wrapped whole
	case urn == URNKV && len(sub) == 2:
		return !needsWrap(coders, sub[0], depth+1) && outerSplittable(coders, sub[1], depth+1)
	case (urn == URNNullable || urn == URNShardedKey) && len(sub) == 1:
		return outerSplittable(coders, sub[0], depth+1)
	}
	return true
}

// needsWrap reports whether LPUnknown would change coder id: it holds a
// coder the runner does not know outside any length prefix.
func needsWrap(coders map[string]*pipepb.Coder, id string, depth int) bool {
	c := coders[id]
	if c == nil || depth > 50 {
		return true
	}
	urn := c.GetSpec().GetUrn()
	if urn == URNLengthPrefix {
		return false
	}
	if !Known(urn) {
		return true
	}
	for _, sub := range c.GetComponentCoderIds() {
		if needsWrap(coders, sub, depth+1) {
			return true
		}
	}
	return false
}
