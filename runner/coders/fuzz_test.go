package coders

import (
	"math/rand"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/coder"
)

// Malformed bytes from a misbehaving SDK must produce errors, never panics
// or lengths past the input.

// fuzzSeeds returns SDK-encoded values of each test coder as seeds.
func fuzzSeeds(f *testing.F) ([]*Codec, [][]byte) {
	var codecs []*Codec
	var seeds [][]byte
	r := rand.New(rand.NewSource(6))
	for _, tc := range lenCases(f) {
		coders, id := marshal(f, tc.c)
		codecs = append(codecs, mustCompile(f, coders, id))
		seeds = append(seeds, sdkEncode(f, tc.c, tc.gen(r)))
	}
	return codecs, seeds
}

func FuzzLen(f *testing.F) {
	codecs, seeds := fuzzSeeds(f)
	for i, s := range seeds {
		f.Add(uint8(i), s)
	}
	f.Add(uint8(7), []byte{0xff, 0xff, 0xff, 0xff, 0x80})                   // chunked iterable
	f.Add(uint8(7), []byte{0x7f, 0xff, 0xff, 0xff})                         // huge count
	f.Add(uint8(0), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}) // huge length
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		c := codecs[int(which)%len(codecs)]
		n, err := c.Len(b)
		if err == nil && (n < 0 || n > len(b)) {
			t.Fatalf("%s: Len = %d for %d bytes", c.URN(), n, len(b))
		}
		if kv, v, n, err := c.SplitKV(b); err == nil && len(kv)+len(v) != n {
			t.Fatalf("SplitKV sizes %d+%d != %d", len(kv), len(v), n)
		}
	})
}

func FuzzLenParseWindowedValue(f *testing.F) {
	wvc := coder.NewW(coder.NewString(), coder.NewIntervalWindow())
	coders, id := marshal(f, wvc)
	c, err := CompileWindowedValue(coders, id)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(AppendWindowedValue(nil, 5, 1, AppendIntervalWindow(nil, IntervalWindow{0, 10}), NoFiringPane, []byte{1, 'a'}))
	f.Fuzz(func(t *testing.T, b []byte) {
		var wv WindowedValue
		n, err := c.Parse(b, &wv)
		if err != nil {
			return
		}
		if n > len(b) || len(wv.Elem) > n {
			t.Fatalf("Parse consumed %d of %d", n, len(b))
		}
		if l, err := c.Elem.Len(wv.Elem); err != nil || l != len(wv.Elem) {
			t.Fatalf("element %x does not measure itself", wv.Elem)
		}
		for rest, i := wv.Windows, 0; i < wv.NumWindows; i++ {
			if _, rest, err = c.NextWindow(rest); err != nil {
				t.Fatalf("window %d unparsable after successful Parse: %v", i, err)
			}
		}
	})
}

func FuzzLenTimer(f *testing.F) {
	tc := coder.NewT(coder.NewString(), coder.NewIntervalWindow())
	coders, id := marshal(f, tc)
	c, err := CompileTimer(coders, id)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(AppendTimer(nil, &Timer{Key: []byte{1, 'k'}, Tag: []byte("t"), NumWindows: 1,
		Windows: AppendIntervalWindow(nil, IntervalWindow{0, 10}), Pane: NoFiringPane}))
	f.Fuzz(func(t *testing.T, b []byte) {
		var tm Timer
		n, err := c.Parse(b, &tm)
		if err == nil && n > len(b) {
			t.Fatalf("Parse consumed %d of %d", n, len(b))
		}
	})
}

func FuzzLenPane(f *testing.F) {
	f.Add([]byte{0x0f})
	f.Add(AppendPane(nil, PaneInfo{Timing: TimingLate, Index: 5, OnTimeIndex: 2}))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, n, err := DecodePane(b)
		if err != nil {
			return
		}
		if n > len(b) {
			t.Fatalf("DecodePane consumed %d of %d", n, len(b))
		}
		// Canonical panes (as SDKs write them) survive a round trip; early
		// panes always have on-time index -1 and unknown ones index 0.
		canonical := (p.Timing != TimingEarly || p.OnTimeIndex == -1) &&
			(p.Timing != TimingUnknown || p.Index == 0 && p.OnTimeIndex == 0)
		if q, _, err := DecodePane(AppendPane(nil, p)); canonical && (err != nil || q != p) {
			t.Fatalf("pane %+v re-decoded as %+v, %v", p, q, err)
		}
	})
}
