package engine

import (
	"slices"
	"testing"

	"github.com/beam-runner/beam-runner/runner/coders"
)

// newTestKeyed is a stateful stage's keyed machinery over KV<bytes, bytes>
// in the global window, with one event-time timer family.
func newTestKeyed(t *testing.T) (*keyed, TimerStream) {
	t.Helper()
	ts := TimerStream{Transform: "t", Family: "f"}
	tc, err := coders.CompileTimer(testCoders, "timer")
	if err != nil {
		t.Fatal(err)
	}
	in := PCollSpec{Codec: wvCodec(t, "wv-kv"), Key: mustCompile(t, "bytes")}
	return newKeyed(keyedConfig{stage: "s", in: in, timers: []TimerSpec{{Stream: ts, Codec: tc}}}), ts
}

func cutKeyed(t *testing.T, k *keyed, now, inWM int64, n int) []*bundle {
	t.Helper()
	id := 0
	bs, err := k.cut(now, inWM, true, n, func() *bundle {
		id++
		return &bundle{Bundle: Bundle{ID: id}, minTS: coders.MaxTimestamp}
	})
	if err != nil {
		t.Fatal(err)
	}
	return bs
}

// A key is in one bundle at a time: input that arrives for a busy key
// waits for its bundle's release, and keys spread over the bundles in
// order.
func TestKeyedOneBundlePerKey(t *testing.T) {
	k, _ := newTestKeyed(t)
	if err := k.add(globalKV(5, "b", "1", "a", "2", "c", "3"), coders.MinTimestamp); err != nil {
		t.Fatal(err)
	}
	if wm := k.watermark(coders.MaxTimestamp); wm != 5 {
		t.Errorf("watermark with pending input at 5 = %d", wm)
	}
	bs := cutKeyed(t, k, 0, coders.MinTimestamp, 2)
	if len(bs) != 2 || !slices.Equal(bs[0].Keys, []string{"\x01a", "\x01c"}) || !slices.Equal(bs[1].Keys, []string{"\x01b"}) {
		t.Fatalf("bundles' keys: %v", keysOf(bs))
	}
	if err := k.add(globalKV(7, "a", "4"), coders.MinTimestamp); err != nil {
		t.Fatal(err)
	}
	if bs := cutKeyed(t, k, 0, coders.MinTimestamp, 2); len(bs) != 0 {
		t.Fatalf("a busy key was handed out again: %v", keysOf(bs))
	}
	k.release(bs[0].Keys)
	bs = cutKeyed(t, k, 0, coders.MinTimestamp, 2)
	if len(bs) != 1 || !slices.Equal(bs[0].Keys, []string{"\x01a"}) || bs[0].minTS != 7 {
		t.Fatalf("after release: %v", keysOf(bs))
	}
}

// Timers fire once the input watermark passes them, earliest first, and
// hold the output watermark at their hold until then.
func TestKeyedTimers(t *testing.T) {
	k, ts := newTestKeyed(t)
	set := append(timerBytes("a", 10, 3, "x"), timerBytes("a", 20, 4, "y")...)
	if err := k.setTimers(map[TimerStream][][]byte{ts: {set}}); err != nil {
		t.Fatal(err)
	}
	if wm := k.watermark(coders.MaxTimestamp); wm != 3 {
		t.Errorf("watermark held by timers = %d, want 3", wm)
	}
	if bs := cutKeyed(t, k, 0, 10, 1); len(bs) != 0 {
		t.Fatalf("a timer at 10 fired at input watermark 10: %v", keysOf(bs))
	}
	bs := cutKeyed(t, k, 0, 25, 1)
	if len(bs) != 1 || string(bs[0].Timers[ts]) != string(timerBytes("a", 10, 3, "x")) {
		t.Fatalf("at 25 want only the earliest timer, got %v", bs)
	}
	k.release(bs[0].Keys)
	if bs := cutKeyed(t, k, 0, 25, 1); len(bs) != 1 || string(bs[0].Timers[ts]) != string(timerBytes("a", 20, 4, "y")) {
		t.Fatalf("then the next: %v", bs)
	}
}

// A key's window expires once the input watermark passes its end, when no
// bundle owns the key and nothing of it is pending.
func TestKeyedExpiry(t *testing.T) {
	k, _ := newTestKeyed(t)
	if err := k.add(globalKV(1, "a", "1"), coders.MinTimestamp); err != nil {
		t.Fatal(err)
	}
	if got := k.expire(coders.MaxTimestamp); len(got) != 0 {
		t.Fatalf("expired with input pending: %v", got)
	}
	bs := cutKeyed(t, k, 0, coders.MinTimestamp, 1)
	if got := k.expire(coders.MaxTimestamp); len(got) != 0 {
		t.Fatalf("expired while its key is busy: %v", got)
	}
	k.release(bs[0].Keys)
	got := k.expire(coders.MaxTimestamp)
	if len(got) != 1 || got[0].Stage != "s" || string(got[0].Key) != "\x01a" {
		t.Fatalf("expired %v, want the key's global window", got)
	}
	if got := k.expire(coders.MaxTimestamp); len(got) != 0 {
		t.Fatalf("expired twice: %v", got)
	}
}

func keysOf(bs []*bundle) [][]string {
	var out [][]string
	for _, b := range bs {
		out = append(out, b.Keys)
	}
	return out
}
