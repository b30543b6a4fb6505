package coders

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
)

// chunkCoders: windowed KV(bytes, bytes) in the global window.
var chunkCoders = map[string]*pipepb.Coder{
	"bytes": {Spec: &pipepb.FunctionSpec{Urn: URNBytes}},
	"kv":    {Spec: &pipepb.FunctionSpec{Urn: URNKV}, ComponentCoderIds: []string{"bytes", "bytes"}},
	"gw":    {Spec: &pipepb.FunctionSpec{Urn: URNGlobalWindow}},
	"wv-kv": {Spec: &pipepb.FunctionSpec{Urn: URNWindowedValue}, ComponentCoderIds: []string{"kv", "gw"}},
}

func chunkCodec(t *testing.T) *WindowedValueCodec {
	t.Helper()
	c, err := CompileWindowedValue(chunkCoders, "wv-kv")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func kv(k, v string) []byte {
	return AppendLengthPrefixed(AppendLengthPrefixed(nil, []byte(k)), []byte(v))
}

// kvChunks makes n chunks of per elements each, timestamped 0, 1, ... in
// order.
func kvChunks(n, per int) ([][]byte, int) {
	var chunks [][]byte
	for c := 0; c < n; c++ {
		var buf []byte
		for i := 0; i < per; i++ {
			buf = AppendWindowedValue(buf, int64(c*per+i), 1, nil, NoFiringPane, kv(fmt.Sprint("k", c, i), "value"))
		}
		chunks = append(chunks, buf)
	}
	return chunks, n * per
}

func count(t *testing.T, chunks [][]byte, wv *WindowedValueCodec) int {
	t.Helper()
	got := 0
	if err := Each(chunks, wv, func(*WindowedValue) error { got++; return nil }); err != nil {
		t.Fatalf("chunks do not parse: %v", err)
	}
	return got
}

// Split must cut only at element boundaries and lose nothing, for any
// number of parts and chunk layout.
func TestSplitAtElementBoundaries(t *testing.T) {
	wv := chunkCodec(t)
	for _, nc := range []int{1, 3, 17} {
		for _, n := range []int{2, 3, 7, 64} {
			chunks, total := kvChunks(nc, 1000)
			parts, err := Split(chunks, wv, n)
			if err != nil {
				t.Fatal(err)
			}
			if len(parts) > n {
				t.Errorf("chunks %d n %d: %d parts", nc, n, len(parts))
			}
			got := 0
			for _, p := range parts {
				got += count(t, p, wv)
			}
			if got != total {
				t.Errorf("chunks %d n %d: %d elements after split, want %d", nc, n, got, total)
			}
		}
	}
}

// Frames ends a frame at the first element boundary at or past max, so
// only a frame's last element reaches past max, and keeps the input's
// bytes unchanged.
func TestFramesCutAtElementBoundaries(t *testing.T) {
	wv := chunkCodec(t)
	chunks, total := kvChunks(3, 500)
	for _, max := range []int{1, 100, 4096, 1 << 20} {
		frames, err := Frames(chunks, wv, max)
		if err != nil {
			t.Fatal(err)
		}
		for i, f := range frames {
			last := 0
			EachRaw(f, wv, func(_ *WindowedValue, raw []byte) error { last = len(raw); return nil })
			if len(f)-last >= max {
				t.Errorf("max %d: frame %d of %d bytes goes on past max by more than its last element", max, i, len(f))
			}
		}
		if !bytes.Equal(bytes.Join(frames, nil), bytes.Join(chunks, nil)) || count(t, frames, wv) != total {
			t.Errorf("max %d: frames do not hold the input unchanged", max)
		}
	}
}

// ElementsFrom returns the elements from an index on, one slice each, and
// names a malformed chunk.
func TestElementsFrom(t *testing.T) {
	wv := chunkCodec(t)
	chunks, total := kvChunks(4, 10)
	got, err := ElementsFrom(chunks, wv, 25)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != total-25 {
		t.Fatalf("%d elements from index 25 of %d", len(got), total)
	}
	var v WindowedValue
	if _, err := wv.Parse(got[0], &v); err != nil || v.Timestamp != 25 {
		t.Errorf("first element: timestamp %d, err %v; want 25", v.Timestamp, err)
	}
	if _, err := ElementsFrom([][]byte{{0xff}}, wv, 0); err == nil {
		t.Error("a malformed chunk gave no error")
	}
}

// IndexSide serves iterable values by window, and multimap values by key
// with the keys in first-seen order.
func TestIndexSide(t *testing.T) {
	wv := chunkCodec(t)
	var c []byte
	for _, p := range [][2]string{{"b", "1"}, {"a", "2"}, {"b", "3"}} {
		c = AppendWindowedValue(c, 0, 1, nil, NoFiringPane, kv(p[0], p[1]))
	}
	var global []byte // the global window encodes as no bytes
	it, err := IndexSide([][]byte{c}, wv, nil)
	if err != nil || len(it.Values(global)) != 3 {
		t.Fatalf("iterable: %d values, err %v; want 3", len(it.Values(global)), err)
	}
	mm, err := IndexSide([][]byte{c}, wv, wv.Elem.Component(0))
	if err != nil {
		t.Fatal(err)
	}
	keys := mm.Keys(global)
	if len(keys) != 2 || !bytes.Equal(keys[0], AppendLengthPrefixed(nil, []byte("b"))) {
		t.Fatalf("keys %q, want b then a", keys)
	}
	if vs := mm.ByKey(global, keys[0]); len(vs) != 2 {
		t.Errorf("key b: %d values, want 2", len(vs))
	}
}

// ValuesPage pages an iterable side input at element boundaries, each
// page as many whole elements as fit in max (at least one), across chunks,
// and the pages join to the window's values.
func TestSideValuesPage(t *testing.T) {
	wv := chunkCodec(t)
	var chunks [][]byte
	var want [][]byte
	for ci := 0; ci < 3; ci++ {
		var c []byte
		for i := 0; i < 20; i++ {
			v := kv("k", strings.Repeat("x", (ci*20+i)%7*5))
			c = AppendWindowedValue(c, 0, 1, nil, NoFiringPane, v)
			want = append(want, v)
		}
		chunks = append(chunks, c)
	}
	x, err := IndexSide(chunks, wv, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := x.Values(nil); len(got) != len(want) || !bytes.Equal(bytes.Join(got, nil), bytes.Join(want, nil)) {
		t.Fatalf("Values: %d elements, want %d", len(got), len(want))
	}
	for _, max := range []int{1, 30, 100, 1 << 20} {
		from, pages := 0, 0
		for from >= 0 {
			page, next, err := x.ValuesPage(nil, from, max)
			if err != nil {
				t.Fatal(err)
			}
			end := next
			if end < 0 {
				end = len(want)
			}
			if end <= from || !bytes.Equal(page, bytes.Join(want[from:end], nil)) {
				t.Fatalf("max %d: page from %d to %d is not those whole elements", max, from, end)
			}
			if end-from > 1 && len(page) > max {
				t.Fatalf("max %d: page of %d elements has %d bytes", max, end-from, len(page))
			}
			if next >= 0 && len(page)+len(want[next]) <= max {
				t.Fatalf("max %d: page from %d stops before element %d, which fits", max, from, next)
			}
			from, pages = next, pages+1
		}
		if max == 1<<20 && pages != 1 {
			t.Errorf("everything fits in one page, got %d", pages)
		}
	}
	if _, _, err := x.ValuesPage(nil, len(want)+1, 10); err == nil {
		t.Error("a page past the end gave no error")
	}
}
