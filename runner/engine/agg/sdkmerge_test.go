package agg

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/coders"
)

// A merger stands in for the SDK's merge_windows: it answers one key's
// windows with the merges it makes.
type merger func(t *testing.T, windows [][]byte) []WindowMerge

// sessionMerger merges overlapping interval windows, as Beam's
// MergeOverlappingIntervalWindows (Sessions' merge) does.
func sessionMerger(t *testing.T, windows [][]byte) []WindowMerge {
	type iv struct {
		w   coders.IntervalWindow
		enc []byte
	}
	var ws []iv
	for _, b := range windows {
		w, _, err := coders.DecodeIntervalWindow(b)
		if err != nil {
			t.Fatalf("merge request window %x: %v", b, err)
		}
		ws = append(ws, iv{w, b})
	}
	slices.SortFunc(ws, func(a, b iv) int { return int(a.w.Start - b.w.Start) })
	var out []WindowMerge
	flush := func(group []iv, union coders.IntervalWindow) {
		if len(group) < 2 {
			return
		}
		m := WindowMerge{Result: coders.AppendIntervalWindow(nil, union)}
		for _, g := range group {
			m.Originals = append(m.Originals, g.enc)
		}
		out = append(out, m)
	}
	var group []iv
	var union coders.IntervalWindow
	for _, w := range ws {
		if len(group) > 0 && w.w.Start < union.End {
			group = append(group, w)
			union.End = max(union.End, w.w.End)
			continue
		}
		flush(group, union)
		group, union = []iv{w}, w.w
	}
	flush(group, union)
	return out
}

// evenMerger is fn_runner_test's CustomMergingWindowFn: every window whose
// start is even merges into their span, odd ones stay.
func evenMerger(t *testing.T, windows [][]byte) []WindowMerge {
	var m WindowMerge
	var span coders.IntervalWindow
	for _, b := range windows {
		w, _, err := coders.DecodeIntervalWindow(b)
		if err != nil {
			t.Fatalf("merge request window %x: %v", b, err)
		}
		if w.Start%2 != 0 {
			continue
		}
		if len(m.Originals) == 0 {
			span = w
		}
		span = coders.IntervalWindow{Start: min(span.Start, w.Start), End: max(span.End, w.End)}
		m.Originals = append(m.Originals, b)
	}
	if len(m.Originals) == 0 {
		return nil
	}
	m.Result = coders.AppendIntervalWindow(nil, span)
	return []WindowMerge{m}
}

// answer runs the merges a GBK asks for through mg.
func answer(t *testing.T, g *GBK, mg merger) {
	t.Helper()
	for g.WindowMergesWaiting() {
		var res []WindowMergeResult
		for _, r := range g.TakeWindowMergeRequests() {
			res = append(res, WindowMergeResult{Key: r.Key, Merges: mg(t, r.Windows)})
		}
		if err := g.ApplyWindowMerges(res); err != nil {
			t.Fatalf("ApplyWindowMerges: %v", err)
		}
	}
}

// runMerging is runScript for a GBK whose windows the SDK merges, each
// command followed by the answer to what it asked: each element is a
// batch of its own.
func runMerging(t *testing.T, cfg Config, lines []string, mg merger) []string {
	t.Helper()
	g, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	d := &driver{g: g, merge: mg, auto: true}
	var out []string
	for _, line := range lines {
		out = append(out, d.mustDo(t, line)...)
	}
	return out
}

func sdkMerging(c Config) Config { c.Merging, c.SDKWindowMerge = true, true; return c }

// TestSDKMergeIsSessions model-checks the SDK path against the GBK's own
// sessions: with the SDK answering as Sessions does, random inputs,
// watermarks and processing times give the same panes, in the same order,
// under every trigger and accumulation mode the sessions tests use.
func TestSDKMergeIsSessions(t *testing.T) {
	cfgs := map[string]Config{
		"default":            sessions(nil),
		"count2-accum":       accumulating(sessions(tRepeat(tCount(2)))),
		"early-late":         withLateness(sessions(tEOW(tCount(1), tCount(1))), 30),
		"pt-early":           accumulating(sessions(tEOW(tPT(delay(5)), nil))),
		"earliest":           withOutputTime(sessions(tEOW(tCount(2), nil)), pipepb.OutputTime_EARLIEST_IN_PANE),
		"latest-lateness":    withLateness(withOutputTime(sessions(nil), pipepb.OutputTime_LATEST_IN_PANE), 20),
		"orfinally-count3":   sessions(tOrFinally(tRepeat(tCount(1)), tCount(3))),
		"eow-accum-lateness": withLateness(accumulating(sessions(tEOW(nil, tCount(1)))), 50),
	}
	rng := rand.New(rand.NewSource(17))
	for name, cfg := range cfgs {
		for i := range 60 {
			lines := randomSessionScript(rng)
			want := runScript(t, cfg, lines)
			got := runMerging(t, sdkMerging(cfg), lines, sessionMerger)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("%s #%d: script\n\t%s\nSDK merge:\n\t%s\nsessions:\n\t%s", name, i,
					strings.Join(lines, "\n\t"), strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
			}
		}
	}
}

// randomSessionScript adds values of two keys in sessions of gap 10 while
// watermark and processing time move, then ends the input.
func randomSessionScript(rng *rand.Rand) []string {
	var lines []string
	wm, pt := int64(0), int64(0)
	for v := range 12 + rng.Intn(12) {
		switch rng.Intn(5) {
		case 0:
			wm += int64(rng.Intn(20))
			lines = append(lines, fmt.Sprintf("wm %d", wm))
		case 1:
			pt += int64(rng.Intn(8))
			lines = append(lines, fmt.Sprintf("pt %d", pt))
		}
		ts := max(0, wm-10+int64(rng.Intn(40)))
		lines = append(lines, fmt.Sprintf("add %c %d-%d v%d %d", 'a'+rng.Intn(2), ts, ts+10, v, ts))
	}
	return append(lines, "hold", "wm inf", "dropped", "done")
}

// TestSDKMergeWaits: while windows wait for the SDK, the watermark and
// the hold wait with them, and a second request goes out only after the
// first was answered, naming the windows merged meanwhile.
func TestSDKMergeWaits(t *testing.T) {
	g, err := New(sdkMerging(Config{Window: coders.IntervalWindows}))
	if err != nil {
		t.Fatal(err)
	}
	add := func(s, e, ts int64) {
		if err := g.Add([]byte("k"), iw(s, e), []byte("v"), ts, 0); err != nil {
			t.Fatal(err)
		}
	}
	add(0, 10, 5)
	g.AdvanceWatermark(100)
	if g.Watermark() != coders.MinTimestamp || g.Hold() != 5 {
		t.Fatalf("waiting: watermark %d hold %d, want the minimum and 5", g.Watermark(), g.Hold())
	}
	reqs := g.TakeWindowMergeRequests()
	add(5, 15, 7)
	if g.WindowMergesWaiting() || g.TakeWindowMergeRequests() != nil {
		t.Fatal("a second request went out before the first was answered")
	}
	if err := g.ApplyWindowMerges([]WindowMergeResult{{Key: reqs[0].Key}}); err != nil {
		t.Fatal(err)
	}
	if g.Watermark() != 100 {
		t.Fatalf("watermark %d after the answer, want 100", g.Watermark())
	}
	if n := len(g.Fire()); n != 1 {
		t.Fatalf("%d panes after the first answer, want the window [0,10)", n)
	}
	reqs = g.TakeWindowMergeRequests()
	if len(reqs) != 1 || len(reqs[0].Windows) != 1 {
		t.Fatalf("second request %v: want one key with one window (the first one's is closed)", reqs)
	}
}

// TestSDKMergeBadAnswers: answers that do not fit the request are errors.
func TestSDKMergeBadAnswers(t *testing.T) {
	g, err := New(sdkMerging(Config{Window: coders.IntervalWindows}))
	if err != nil {
		t.Fatal(err)
	}
	if err := g.ApplyWindowMerges(nil); err == nil {
		t.Error("an answer with no request out was accepted")
	}
	if err := g.Add([]byte("k"), iw(0, 10), []byte("v"), 5, 0); err != nil {
		t.Fatal(err)
	}
	g.TakeWindowMergeRequests()
	if err := g.ApplyWindowMerges([]WindowMergeResult{{Key: []byte("other")}}); err == nil {
		t.Error("an answer for a key not asked was accepted")
	}
	bad := []WindowMergeResult{{Key: []byte("k"), Merges: []WindowMerge{{Result: []byte{1}, Originals: [][]byte{iw(0, 10)}}}}}
	if err := g.ApplyWindowMerges(bad); err == nil {
		t.Error("a malformed merged window was accepted")
	}
}

// customWin is a beam:coder:custom_window:v1 window: its max timestamp,
// then the SDK's bytes for it.
func customWin(maxTS int64, sdk string) []byte {
	return append(coders.AppendTimestamp(nil, maxTS), sdk...)
}

func customPanes(t *testing.T, g *GBK) []string {
	t.Helper()
	var out []string
	for _, p := range g.Fire() {
		vals := make([]string, len(p.Values))
		for i, v := range p.Values {
			vals[i] = string(v)
		}
		out = append(out, fmt.Sprintf("%s %s ts=%d [%s]", p.Key, p.Window[coders.TimestampSize:], p.Timestamp, strings.Join(vals, " ")))
	}
	return out
}

// The SDK names the windows of its answer as it decoded them: when the
// window coder keeps less precision than the window had, with another max
// timestamp prefix than the elements carried. The elements still go to the
// merged window, both of those whose prefixes differ from the SDK's.
func TestSDKMergeNamesWindowsByTheirSDKBytes(t *testing.T) {
	g, err := New(Config{Window: coders.CustomWindows, Merging: true, SDKWindowMerge: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []struct {
		win   []byte
		value string
	}{
		{customWin(1000, "a"), "x"}, {customWin(999, "a"), "y"}, {customWin(2000, "b"), "z"}, {customWin(5000, "c"), "w"},
	} {
		if err := g.Add([]byte("k"), e.win, []byte(e.value), 900, coders.MinTimestamp); err != nil {
			t.Fatal(err)
		}
	}
	reqs := g.TakeWindowMergeRequests()
	if len(reqs) != 1 || len(reqs[0].Windows) != 4 {
		t.Fatalf("requests %v, want one for k with 4 windows", reqs)
	}
	merge := WindowMerge{Result: customWin(1999, "m"), Originals: [][]byte{customWin(998, "a"), customWin(1999, "b")}}
	if err := g.ApplyWindowMerges([]WindowMergeResult{{Key: []byte("k"), Merges: []WindowMerge{merge}}}); err != nil {
		t.Fatal(err)
	}
	g.AdvanceWatermark(coders.MaxTimestamp)
	got := strings.Join(customPanes(t, g), "\n")
	want := "k m ts=1999 [x y z]\nk c ts=5000 [w]"
	if got != want {
		t.Errorf("panes:\n%s\nwant:\n%s", got, want)
	}
}

// TestSDKMergePartialAnswers: a request's answer may come in parts (the
// merge bundle split, its output cut into chunks). Each key's elements
// join their windows when its answer comes; the watermark moves once
// every key is answered; a key answered twice is an error.
func TestSDKMergePartialAnswers(t *testing.T) {
	g, err := New(sdkMerging(Config{Window: coders.IntervalWindows}))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b"} {
		for _, s := range []int64{0, 5} {
			if err := g.Add([]byte(k), iw(s, s+10), []byte(k+fmt.Sprint(s)), s, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	g.AdvanceWatermark(coders.MaxTimestamp)
	reqs := g.TakeWindowMergeRequests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want one per key", len(reqs))
	}
	answer := func(r WindowMergeRequest) WindowMergeResult {
		return WindowMergeResult{Key: r.Key, Merges: sessionMerger(t, r.Windows)}
	}
	if err := g.ApplyWindowMerges([]WindowMergeResult{answer(reqs[1])}); err != nil {
		t.Fatal(err)
	}
	if g.Watermark() != coders.MinTimestamp || len(g.Fire()) != 0 {
		t.Fatalf("watermark %d and panes after half the answer, want neither", g.Watermark())
	}
	if err := g.ApplyWindowMerges([]WindowMergeResult{answer(reqs[1])}); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Fatalf("a key answered twice: %v", err)
	}
	if err := g.ApplyWindowMerges([]WindowMergeResult{answer(reqs[0])}); err != nil {
		t.Fatal(err)
	}
	if g.Watermark() != coders.MaxTimestamp {
		t.Fatalf("watermark %d after the whole answer, want the end of time", g.Watermark())
	}
	got := strings.Join(intervalPanes(g), "\n")
	if want := "a [0,15) [a0 a5]\nb [0,15) [b0 b5]"; got != want {
		t.Errorf("panes:\n%s\nwant:\n%s", got, want)
	}
}

func intervalPanes(g *GBK) []string {
	var out []string
	for _, p := range g.Fire() {
		w, _, _ := coders.DecodeIntervalWindow(p.Window)
		vals := make([]string, len(p.Values))
		for i, v := range p.Values {
			vals[i] = string(v)
		}
		slices.Sort(vals)
		out = append(out, fmt.Sprintf("%s [%d,%d) [%s]", p.Key, w.Start, w.End, strings.Join(vals, " ")))
	}
	slices.Sort(out)
	return out
}
