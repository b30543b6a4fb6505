package coders

import (
	"bytes"
	"math/rand"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/coder"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/exec"
)

// TestTimerRoundTrip parses SDK-encoded timers, re-encodes them with
// AppendTimer and requires identical bytes.
func TestTimerRoundTrip(t *testing.T) {
	str := coder.NewString()
	tc := coder.NewT(str, coder.NewIntervalWindow())
	coders, id := marshal(t, tc)
	c, err := CompileTimer(coders, id)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewSource(5))
	for i := 0; i < 300; i++ {
		tm := randTimer(r)
		enc := sdkEncode(t, tc, &exec.FullValue{Elm: tm})
		var got Timer
		n, err := c.Parse(append(enc, 7), &got)
		if err != nil || n != len(enc) {
			t.Fatalf("Parse = %d, %v; want %d", n, err, len(enc))
		}
		checkTimer(t, c, &got, tm, sdkEncode(t, str, tm.Key))
		if re := AppendTimer(nil, &got); !bytes.Equal(re, enc) {
			t.Fatalf("AppendTimer = %x, SDK %x", re, enc)
		}
	}
}

func checkTimer(t *testing.T, c *TimerCodec, got *Timer, tm exec.TimerRecv, key []byte) {
	t.Helper()
	if !bytes.Equal(got.Key, key) || string(got.Tag) != tm.Tag || got.Clear != tm.Clear {
		t.Fatalf("parsed %+v, want %+v", got, tm)
	}
	if !tm.Clear && (got.Fire != int64(tm.FireTimestamp) || got.Hold != int64(tm.HoldTimestamp) || got.Pane != toPane(tm.Pane)) {
		t.Fatalf("parsed firing %+v, want %+v", got, tm)
	}
	rest := got.Windows
	for _, w := range tm.Windows {
		enc, r, err := c.NextWindow(rest)
		if err != nil {
			t.Fatal(err)
		}
		rest = r
		iw, _, _ := DecodeIntervalWindow(enc)
		if want := w.(window.IntervalWindow); iw.Start != int64(want.Start) || iw.End != int64(want.End) {
			t.Fatalf("window %+v, want %v", iw, want)
		}
	}
}
