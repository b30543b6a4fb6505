package coders

import (
	"bytes"
	"math/rand"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/coder"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/exec"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/typex"
)

type lenCase struct {
	name string
	c    *coder.Coder
	gen  func(r *rand.Rand) *exec.FullValue
}

func lenCases(t testing.TB) []lenCase {
	str, vi, by := coder.NewString(), coder.NewVarInt(), coder.NewBytes()
	kvSI := coder.NewKV([]*coder.Coder{str, vi})
	gw, iw := coder.NewGlobalWindow(), coder.NewIntervalWindow()
	pt := customPointCoder(t)
	ints := func(r *rand.Rand) []int64 {
		xs := make([]int64, r.Intn(20))
		for i := range xs {
			xs[i] = randInt(r)
		}
		return xs
	}
	return []lenCase{
		{"bytes", by, func(r *rand.Rand) *exec.FullValue { return &exec.FullValue{Elm: []byte(randString(r))} }},
		{"string", str, func(r *rand.Rand) *exec.FullValue { return &exec.FullValue{Elm: randString(r)} }},
		{"varint", vi, func(r *rand.Rand) *exec.FullValue { return &exec.FullValue{Elm: randInt(r)} }},
		{"bool", coder.NewBool(), func(r *rand.Rand) *exec.FullValue { return &exec.FullValue{Elm: r.Intn(2) == 0} }},
		{"double", coder.NewDouble(), func(r *rand.Rand) *exec.FullValue { return &exec.FullValue{Elm: r.NormFloat64()} }},
		{"custom", pt, func(r *rand.Rand) *exec.FullValue { return &exec.FullValue{Elm: point{randInt(r), randInt(r)}} }},
		{"kv", kvSI, func(r *rand.Rand) *exec.FullValue { return &exec.FullValue{Elm: randString(r), Elm2: randInt(r)} }},
		{"iterable", coder.NewI(vi), func(r *rand.Rand) *exec.FullValue { return &exec.FullValue{Elm: ints(r)} }},
		{"iterable-fixed", coder.NewI(coder.NewDouble()), func(r *rand.Rand) *exec.FullValue {
			return &exec.FullValue{Elm: make([]float64, r.Intn(10))}
		}},
		{"kv-iterable", coder.NewKV([]*coder.Coder{pt, coder.NewI(vi)}), func(r *rand.Rand) *exec.FullValue {
			return &exec.FullValue{Elm: point{randInt(r), 1}, Elm2: ints(r)}
		}},
		{"interval-window", coder.NewIntervalWindowCoder(), func(r *rand.Rand) *exec.FullValue {
			return &exec.FullValue{Elm: randIntervals(r)[0]}
		}},
		{"nullable", coder.NewN(vi), func(r *rand.Rand) *exec.FullValue {
			if r.Intn(2) == 0 {
				return &exec.FullValue{}
			}
			return &exec.FullValue{Elm: randInt(r)}
		}},
		{"sharded-key", coder.NewSK(str), func(r *rand.Rand) *exec.FullValue {
			return &exec.FullValue{Elm: randString(r), Elm2: []byte(randString(r))}
		}},
		{"wv-global", coder.NewW(kvSI, gw), func(r *rand.Rand) *exec.FullValue {
			return &exec.FullValue{Elm: randString(r), Elm2: randInt(r), Timestamp: randTime(r),
				Windows: []typex.Window{}, Pane: randPane(r)}
		}},
		{"wv-interval", coder.NewW(by, iw), func(r *rand.Rand) *exec.FullValue {
			return &exec.FullValue{Elm: []byte(randString(r)), Timestamp: randTime(r), Windows: randIntervals(r), Pane: randPane(r)}
		}},
		{"timer", coder.NewT(str, iw), func(r *rand.Rand) *exec.FullValue { return &exec.FullValue{Elm: randTimer(r)} }},
	}
}

func randTimer(r *rand.Rand) exec.TimerRecv {
	tm := exec.TimerRecv{
		Key:     &exec.FullValue{Elm: randString(r)},
		Windows: randIntervals(r),
		Pane:    randPane(r),
		TimerMap: timers.TimerMap{Tag: []string{"", "t", "family-tag"}[r.Intn(3)], Clear: r.Intn(3) == 0,
			FireTimestamp: randTime(r), HoldTimestamp: randTime(r)},
	}
	if tm.Clear {
		tm.FireTimestamp, tm.HoldTimestamp, tm.Pane = 0, 0, typex.PaneInfo{}
	}
	return tm
}

// TestLenMatchesSDK encodes random values with the SDK, concatenates them
// like a data-plane stream, and checks Len finds every boundary exactly.
func TestLenMatchesSDK(t *testing.T) {
	for _, tc := range lenCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			coders, id := marshal(t, tc.c)
			c := mustCompile(t, coders, id)
			r := rand.New(rand.NewSource(1))
			var stream []byte
			var sizes []int
			for i := 0; i < 200; i++ {
				enc := sdkEncode(t, tc.c, tc.gen(r))
				stream = append(stream, enc...)
				sizes = append(sizes, len(enc))
			}
			for i, want := range sizes {
				got, err := c.Len(stream)
				if err != nil || got != want {
					t.Fatalf("value %d: Len = %d, %v; want %d", i, got, err, want)
				}
				if _, err := c.Len(stream[:want-1]); err == nil {
					t.Fatalf("value %d: Len of truncated value succeeded", i)
				}
				stream = stream[want:]
			}
		})
	}
}

func TestSplitKV(t *testing.T) {
	str, vi := coder.NewString(), coder.NewVarInt()
	kv := coder.NewKV([]*coder.Coder{str, coder.NewI(vi)})
	coders, id := marshal(t, kv)
	c := mustCompile(t, coders, id)
	enc := sdkEncode(t, kv, &exec.FullValue{Elm: "key", Elm2: []int64{1, -2, 3}})
	k, v, n, err := c.SplitKV(enc)
	if err != nil || n != len(enc) {
		t.Fatalf("SplitKV = %d, %v", n, err)
	}
	if want := sdkEncode(t, str, &exec.FullValue{Elm: "key"}); !bytes.Equal(k, want) {
		t.Errorf("key = %x, want %x", k, want)
	}
	if want := sdkEncode(t, coder.NewI(vi), &exec.FullValue{Elm: []int64{1, -2, 3}}); !bytes.Equal(v, want) {
		t.Errorf("value = %x, want %x", v, want)
	}
	if _, _, _, err := c.Component(0).SplitKV(enc); err != ErrNotKV {
		t.Errorf("SplitKV on string coder: err = %v, want ErrNotKV", err)
	}
}

// TestChunkedIterable checks the -1/chunks/0 form Java writes for large
// iterables: Len must measure it and the Go SDK must decode what we build.
func TestChunkedIterable(t *testing.T) {
	it := coder.NewI(coder.NewVarInt())
	coders, id := marshal(t, it)
	c := mustCompile(t, coders, id)
	b := AppendIterableHeader(nil, -1)
	b = AppendVarint(AppendVarint(AppendVarint(b, 2), 7), -8)
	b = AppendVarint(AppendVarint(b, 1), 9)
	b = AppendVarint(b, 0)
	if n, err := c.Len(append(b, 0xff)); err != nil || n != len(b) {
		t.Fatalf("Len = %d, %v; want %d", n, err, len(b))
	}
	fv, err := exec.MakeElementDecoder(it).Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if got := fv.Elm.([]int64); len(got) != 3 || got[0] != 7 || got[1] != -8 || got[2] != 9 {
		t.Errorf("SDK decoded %v", got)
	}
}

// TestStateBackedIterableLen: a chunked iterable may end with -1 and a
// length-prefixed state token instead of 0 (the form Beam's SDKs read as a
// state-backed iterable); its length ends after the token.
func TestStateBackedIterableLen(t *testing.T) {
	coders, id := marshal(t, coder.NewI(coder.NewVarInt()))
	c := mustCompile(t, coders, id)
	b := AppendIterableHeader(nil, -1)
	b = AppendVarint(AppendVarint(b, 1), 7)
	b = AppendLengthPrefixed(AppendVarint(b, -1), []byte("token"))
	if n, err := c.Len(append(b, 0xff, 0xff)); err != nil || n != len(b) {
		t.Fatalf("Len = %d, %v; want %d", n, err, len(b))
	}
	if _, err := c.Len(b[:len(b)-1]); err == nil {
		t.Error("Len of a truncated token: no error")
	}
}

// TestBuildGBKOutput builds KV<string, iterable<varint>> from encoded parts
// the way the runner assembles GBK results, and checks the SDK decodes it.
func TestBuildGBKOutput(t *testing.T) {
	str, vi := coder.NewString(), coder.NewVarInt()
	kv := coder.NewKV([]*coder.Coder{str, coder.NewI(vi)})
	out := append([]byte(nil), sdkEncode(t, str, &exec.FullValue{Elm: "k"})...)
	out = AppendIterableHeader(out, 3)
	for _, v := range []int64{1, -1, 1 << 40} {
		out = append(out, sdkEncode(t, vi, &exec.FullValue{Elm: v})...)
	}
	fv, err := exec.MakeElementDecoder(kv).Decode(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if fv.Elm != "k" || len(fv.Elm2.([]int64)) != 3 || fv.Elm2.([]int64)[2] != 1<<40 {
		t.Errorf("SDK decoded %v", fv)
	}
}

func TestVarintMatchesSDK(t *testing.T) {
	for _, v := range []int64{0, 1, 127, 128, 300, -1, -300, 1 << 62, -1 << 63, 1<<63 - 1} {
		var buf bytes.Buffer
		coder.EncodeVarInt(v, &buf)
		got := AppendVarint(nil, v)
		if !bytes.Equal(got, buf.Bytes()) || UvarintLen(uint64(v)) != len(got) {
			t.Errorf("AppendVarint(%d) = %x, want %x", v, got, buf.Bytes())
		}
		if d, n, err := Varint(got); d != v || n != len(got) || err != nil {
			t.Errorf("Varint(%x) = %d, %d, %v", got, d, n, err)
		}
	}
	if _, _, err := Uvarint([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}); err != ErrOverflow {
		t.Errorf("11-bit overflow: err = %v", err)
	}
}
