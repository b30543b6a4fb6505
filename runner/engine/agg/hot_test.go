package agg

import (
	"bytes"
	"testing"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"

	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/runner/store"
)

// TestHotKeyPages: a spilled key whose values pass the hot budget fires as
// a state-backed iterable (a chunk of values, -1 and a token) whose pages
// in the hot space hold the rest; reading them back gives the same values,
// in the same order, as the in-memory pane. Other keys are unchanged.
func TestHotKeyPages(t *testing.T) {
	st, err := store.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	value := func(i int) []byte { // length-prefixed bytes, as the SDK nests them
		return coders.AppendLengthPrefixed(nil, bytes.Repeat([]byte{byte(i)}, 100+i%50))
	}
	gbkOut, err := coders.CompileWindowedValue(map[string]*pipepb.Coder{
		"b":   {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:bytes:v1"}},
		"it":  {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:iterable:v1"}, ComponentCoderIds: []string{"b"}},
		"kv":  {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:kv:v1"}, ComponentCoderIds: []string{"b", "it"}},
		"gw":  {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:global_window:v1"}},
		"out": {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:windowed_value:v1"}, ComponentCoderIds: []string{"kv", "gw"}},
	}, "out")
	if err != nil {
		t.Fatal(err)
	}
	run := func(spill, hot Spill) [][]byte {
		cfg := goSDK(tDefault(), coders.GlobalWindow)
		cfg.Spill, cfg.SpillBudget = spill, 10<<10
		cfg.Hot, cfg.HotPrefix, cfg.HotBytes = hot, []byte("gbk\x00"), 20<<10
		g, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 30000; i++ {
			key := coders.AppendLengthPrefixed(nil, []byte("hot"))
			if i%1000 == 0 {
				key = coders.AppendLengthPrefixed(nil, []byte("cold"))
			}
			if err := g.Add(key, nil, value(i), int64(i), 0); err != nil {
				t.Fatal(err)
			}
		}
		g.AdvanceWatermark(coders.MaxTimestamp)
		var panes [][]byte
		for _, c := range g.FireEncoded(1 << 20) {
			for len(c) > 0 {
				var wv coders.WindowedValue
				n, err := gbkOut.Parse(c, &wv)
				if err != nil {
					t.Fatal(err)
				}
				panes, c = append(panes, wv.Elem), c[n:]
			}
		}
		if err := g.Err(); err != nil {
			t.Fatal(err)
		}
		return panes
	}
	want := run(nil, nil)
	hotSpace := st.Space("h/")
	got := run(st.Space("s/"), hotSpace)
	if len(got) != 2 || len(want) != 2 {
		t.Fatalf("got %d panes, want 2", len(got))
	}
	// Keys fire in byte order: "\x03hot" before "\x04cold".
	if !bytes.Equal(got[1], want[1]) {
		t.Error("the cold key's pane changed")
	}
	hdr, vals, token := splitPane(t, got[0])
	if token == nil {
		t.Fatal("the hot key's pane is not state-backed")
	}
	if len(vals) > 25<<10 {
		t.Errorf("the hot pane carries %d bytes inline; the budget is 20 KiB", len(vals))
	}
	for i := 0; ; i++ {
		var page []byte
		if err := hotSpace.Scan(HotPageKey(token, i), func(k, v []byte) error {
			page = bytes.Clone(v)
			return nil
		}); err != nil || page == nil {
			t.Fatalf("page %d: %v (missing: %v)", i, err, page == nil)
		}
		vals = append(vals, page[1:]...)
		if page[0] == HotLastPage {
			break
		}
	}
	wantHdr, wantVals, wantToken := splitPane(t, want[0])
	if wantToken != nil {
		t.Fatal("without a hot space the pane is state-backed")
	}
	if !bytes.Equal(hdr, wantHdr) || !bytes.Equal(vals, wantVals) {
		t.Errorf("the hot key's values read back from pages differ: %d bytes vs %d", len(vals), len(wantVals))
	}
}

// splitPane parses KV(bytes key, iterable(bytes)) into the key, the
// inline values' bytes and, for the state-backed form, the token.
func splitPane(t *testing.T, b []byte) (key, vals, token []byte) {
	t.Helper()
	key, n, err := coders.LengthPrefixed(b)
	if err != nil {
		t.Fatal(err)
	}
	b = b[n:]
	count, n, err := coders.IterableHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	b = b[n:]
	if count == -1 {
		c, n, err := coders.Varint(b)
		if err != nil {
			t.Fatal(err)
		}
		count, b = int32(c), b[n:]
	}
	for i := int32(0); i < count; i++ {
		_, n, err := coders.LengthPrefixed(b)
		if err != nil {
			t.Fatal(err)
		}
		vals, b = append(vals, b[:n]...), b[n:]
	}
	if len(b) == 0 {
		return key, vals, nil
	}
	if c, n, err := coders.Varint(b); err != nil || c != -1 {
		t.Fatalf("after the values: %d, %v; want -1", c, err)
	} else {
		b = b[n:]
	}
	token, n, err = coders.LengthPrefixed(b)
	if err != nil || n != len(b) {
		t.Fatalf("token: %v (%d of %d bytes)", err, n, len(b))
	}
	return key, vals, token
}
