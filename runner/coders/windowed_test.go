package coders

import (
	"bytes"
	"math/rand"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/coder"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/exec"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/typex"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
)

func TestConstantsMatchSDK(t *testing.T) {
	if MinTimestamp != int64(mtime.MinTimestamp) || MaxTimestamp != int64(mtime.MaxTimestamp) ||
		EndOfGlobalWindow != int64(mtime.EndOfGlobalWindowTime) {
		t.Errorf("timestamp bounds differ from mtime")
	}
}

func TestPaneMatchesSDK(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	for i := 0; i < 2000; i++ {
		sp := randPane(r)
		var buf bytes.Buffer
		if err := coder.EncodePane(sp, &buf); err != nil {
			t.Fatal(err)
		}
		got := AppendPane(nil, toPane(sp))
		if !bytes.Equal(got, buf.Bytes()) {
			t.Fatalf("AppendPane(%+v) = %x, SDK %x", sp, got, buf.Bytes())
		}
		p, n, err := DecodePane(append(got, 0xaa))
		sdk, _ := coder.DecodePane(bytes.NewReader(got))
		if err != nil || n != len(got) || p != toPane(sdk) {
			t.Fatalf("DecodePane(%x) = %+v, %d, %v; SDK %+v", got, p, n, err, sdk)
		}
	}
	if p, _, _ := DecodePane([]byte{0x0f}); p != NoFiringPane {
		t.Errorf("0x0f decodes to %+v, want NoFiringPane", p)
	}
	if _, _, err := DecodePane([]byte{0x3f}); err != ErrBadValue {
		t.Errorf("unknown pane encoding: err = %v", err)
	}
}

// TestParseWindowedValue parses SDK-encoded windowed values and compares
// every header field and the element bytes.
func TestParseWindowedValue(t *testing.T) {
	str := coder.NewString()
	for _, wc := range []*coder.WindowCoder{coder.NewGlobalWindow(), coder.NewIntervalWindow()} {
		wvc := coder.NewW(str, wc)
		coders, id := marshal(t, wvc)
		c, err := CompileWindowedValue(coders, id)
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewSource(3))
		for i := 0; i < 300; i++ {
			fv := &exec.FullValue{Elm: randString(r), Timestamp: randTime(r), Pane: randPane(r), Windows: window.SingleGlobalWindow}
			if wc.Kind == coder.IntervalWindow {
				fv.Windows = randIntervals(r)
			}
			enc := sdkEncode(t, wvc, fv)
			var wv WindowedValue
			n, err := c.Parse(append(enc, 1, 2, 3), &wv)
			if err != nil || n != len(enc) {
				t.Fatalf("Parse = %d, %v; want %d", n, err, len(enc))
			}
			checkWV(t, c, &wv, fv, sdkEncode(t, str, fv))
		}
	}
}

func checkWV(t *testing.T, c *WindowedValueCodec, wv *WindowedValue, fv *exec.FullValue, elem []byte) {
	t.Helper()
	if wv.Timestamp != int64(fv.Timestamp) || wv.Pane != toPane(fv.Pane) || !bytes.Equal(wv.Elem, elem) {
		t.Fatalf("parsed %+v, want ts %d pane %+v elem %x", wv, fv.Timestamp, fv.Pane, elem)
	}
	if wv.NumWindows != len(fv.Windows) {
		t.Fatalf("NumWindows = %d, want %d", wv.NumWindows, len(fv.Windows))
	}
	rest := wv.Windows
	for _, want := range fv.Windows {
		w, r, err := c.NextWindow(rest)
		if err != nil {
			t.Fatal(err)
		}
		rest = r
		iw, ok := want.(window.IntervalWindow)
		if !ok {
			if len(w) != 0 {
				t.Fatalf("global window encoded as %x", w)
			}
			continue
		}
		got, _, err := DecodeIntervalWindow(w)
		if err != nil || got != (IntervalWindow{int64(iw.Start), int64(iw.End)}) {
			t.Fatalf("window = %+v, %v; want %v", got, err, iw)
		}
	}
}

// TestAppendWindowedValueDecodesInSDK builds windowed values with our
// Append functions and decodes them with the SDK.
func TestAppendWindowedValueDecodesInSDK(t *testing.T) {
	vi := coder.NewVarInt()
	wvc := coder.NewW(vi, coder.NewIntervalWindow())
	dec := exec.MakeElementDecoder(wvc)
	r := rand.New(rand.NewSource(4))
	for i := 0; i < 300; i++ {
		ts, pane, ws := randTime(r), randPane(r), randIntervals(r)
		var wbytes []byte
		for _, w := range ws {
			iw := w.(window.IntervalWindow)
			wbytes = AppendIntervalWindow(wbytes, IntervalWindow{int64(iw.Start), int64(iw.End)})
		}
		v := randInt(r)
		b := AppendWindowedValue(nil, int64(ts), len(ws), wbytes, toPane(pane), AppendVarint(nil, v))
		fv, err := dec.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if fv.Timestamp != ts || fv.Pane != pane || fv.Elm != v || len(fv.Windows) != len(ws) {
			t.Fatalf("SDK decoded %+v, want ts %v pane %+v elem %d windows %v", fv, ts, pane, v, ws)
		}
		for j := range ws {
			if !fv.Windows[j].Equals(ws[j]) {
				t.Fatalf("window %d = %v, want %v", j, fv.Windows[j], ws[j])
			}
		}
		if want := sdkEncode(t, wvc, fv); !bytes.Equal(b, want) {
			t.Fatalf("bytes differ from SDK: %x vs %x", b, want)
		}
	}
}

// TestGlobalWindowedValueBytes checks the most common header byte for byte.
func TestGlobalWindowedValueBytes(t *testing.T) {
	wvc := coder.NewW(coder.NewBytes(), coder.NewGlobalWindow())
	fv := &exec.FullValue{Elm: []byte("x"), Timestamp: mtime.MinTimestamp, Windows: window.SingleGlobalWindow, Pane: typex.NoFiringPane()}
	want := sdkEncode(t, wvc, fv)
	got := AppendWindowedValue(nil, MinTimestamp, 1, nil, NoFiringPane, AppendLengthPrefixed(nil, []byte("x")))
	if !bytes.Equal(got, want) {
		t.Errorf("got %x, want %x", got, want)
	}
}

func TestParamWindowedValue(t *testing.T) {
	hdr := AppendWindowedValue(nil, 42, 1, AppendIntervalWindow(nil, IntervalWindow{0, 100}),
		PaneInfo{Timing: TimingLate, Index: 3, OnTimeIndex: 1}, AppendLengthPrefixed(nil, nil))
	coders := map[string]*pipepb.Coder{
		"pwv": {Spec: &pipepb.FunctionSpec{Urn: URNParamWindowedValue, Payload: hdr}, ComponentCoderIds: []string{"v", "w"}},
		"v":   {Spec: &pipepb.FunctionSpec{Urn: URNVarint}},
		"w":   {Spec: &pipepb.FunctionSpec{Urn: URNIntervalWindow}},
	}
	c, err := CompileWindowedValue(coders, "pwv")
	if err != nil {
		t.Fatal(err)
	}
	var wv WindowedValue
	n, err := c.Parse([]byte{0x05, 0x99}, &wv)
	if err != nil || n != 1 || wv.Timestamp != 42 || wv.NumWindows != 1 || wv.Pane.Index != 3 || wv.Elem[0] != 5 {
		t.Fatalf("Parse = %d, %v, %+v", n, err, wv)
	}
	coders["pwv"].Spec.Payload = hdr[:3]
	if _, err := CompileWindowedValue(coders, "pwv"); err == nil {
		t.Error("truncated payload compiled")
	}
}
