package coders

import (
	"fmt"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
)

// lookup returns the coder with this id and checks that a known URN has the
// number of components it requires, so later code can index them freely.
func lookup(coders map[string]*pipepb.Coder, id string) (*pipepb.Coder, string, error) {
	c, ok := coders[id]
	if !ok || c == nil {
		return nil, "", fmt.Errorf("coders: coder %q not found", id)
	}
	urn := c.GetSpec().GetUrn()
	if want, ok := components[urn]; ok && want > 0 && len(c.GetComponentCoderIds()) != want {
		return nil, "", fmt.Errorf("coders: coder %q (%s) has %d components, want %d",
			id, urn, len(c.GetComponentCoderIds()), want)
	}
	return c, urn, nil
}

// compiler turns coder protos into Codec trees, refusing cycles so a
// malformed pipeline cannot make it recurse forever.
type compiler struct {
	coders map[string]*pipepb.Coder
	active map[string]bool
}

// Compile builds the Codec for coderID. Every part must be a known coder or
// sit under a length prefix; otherwise the error names the offending coder
// id and URN.
func Compile(coders map[string]*pipepb.Coder, coderID string) (*Codec, error) {
	cc := compiler{coders: coders, active: map[string]bool{}}
	return cc.compile(coderID)
}

func (cc *compiler) compile(id string) (*Codec, error) {
	c, urn, err := lookup(cc.coders, id)
	if err != nil {
		return nil, err
	}
	if cc.active[id] {
		return nil, fmt.Errorf("coders: coder %q (%s) refers to itself", id, urn)
	}
	cc.active[id] = true
	defer delete(cc.active, id)
	k, ok := kinds[urn]
	if !ok {
		return nil, fmt.Errorf("coders: coder %q has unknown urn %q and is not length-prefixed", id, urn)
	}
	cd := &Codec{id: id, urn: urn, kind: k, fixed: fixedSize(k)}
	if k == kLengthPrefixed {
		// The payload's coder is opaque to the runner; only its length matters.
		return cd, nil
	}
	for _, sub := range c.GetComponentCoderIds() {
		sc, err := cc.compile(sub)
		if err != nil {
			return nil, err
		}
		cd.comps = append(cd.comps, sc)
	}
	cd.finish()
	return cd, nil
}

var kinds = map[string]kind{
	URNBytes:              kLengthPrefixed,
	URNStringUTF8:         kLengthPrefixed,
	URNLengthPrefix:       kLengthPrefixed,
	URNVarint:             kVarint,
	URNBool:               kBool,
	URNDouble:             kDouble,
	URNGlobalWindow:       kGlobalWindow,
	URNIntervalWindow:     kIntervalWindow,
	URNKV:                 kKV,
	URNIterable:           kIterable,
	URNWindowedValue:      kWindowedValue,
	URNParamWindowedValue: kParamWindowedValue,
	URNTimer:              kTimer,
	URNNullable:           kNullable,
	URNShardedKey:         kShardedKey,
	URNCustomWindow:       kCustomWindow,
}

// fixedSize is the size of every value of a scalar kind, or -1 when values
// vary in size. Composites refine it in finish.
func fixedSize(k kind) int {
	switch k {
	case kBool:
		return 1
	case kDouble:
		return 8
	case kGlobalWindow:
		return 0
	}
	return -1
}

// finish derives the fixed size of composites once components are compiled.
func (c *Codec) finish() {
	switch c.kind {
	case kKV:
		if k, v := c.comps[0].fixed, c.comps[1].fixed; k >= 0 && v >= 0 {
			c.fixed = k + v
		}
	case kParamWindowedValue:
		c.fixed = c.comps[0].fixed
	}
}
