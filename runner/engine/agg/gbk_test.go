package agg

import (
	"bytes"
	"testing"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/coders"
)

const fixed = coders.IntervalWindows

func withLateness(c Config, ms int64) Config { c.AllowedLateness = ms; return c }
func accumulating(c Config) Config {
	c.Accumulation = pipepb.AccumulationMode_ACCUMULATING
	return c
}
func withOutputTime(c Config, ot pipepb.OutputTime_Enum) Config { c.OutputTime = ot; return c }
func sessions(trig *pipepb.Trigger) Config {
	c := goSDK(trig, fixed)
	c.Merging = true
	return c
}

// TestBatch: all data, then the final watermark, gives one ON_TIME pane per
// (key, window), first and last, ordered by window end then key.
func TestBatch(t *testing.T) {
	runScripts(t, []script{{
		name: "fixed",
		cfg:  Config{Window: fixed},
		run: []string{
			"add b 10-20 x 15", "add a 10-20 y 11", "add a 0-10 z 5", "add b 0-10 w 1", "add a 10-20 v 12",
			"hold", "wm inf", "hold", "done",
		},
		want: []string{
			"hold=9",
			"a 0-10 ON_TIME first last i=0 ot=0 ts=9 [z]",
			"b 0-10 ON_TIME first last i=0 ot=0 ts=9 [w]",
			"a 10-20 ON_TIME first last i=0 ot=0 ts=19 [y v]",
			"b 10-20 ON_TIME first last i=0 ot=0 ts=19 [x]",
			"hold=inf", "done=true",
		},
	}, {
		// Sliding windows: the caller passes one Add per window.
		name: "sliding",
		cfg:  Config{Window: fixed},
		run:  []string{"add k 0-20 a 15", "add k 10-30 a 15", "add k 10-30 b 25", "add k 20-40 b 25", "wm inf"},
		want: []string{
			"k 0-20 ON_TIME first last i=0 ot=0 ts=19 [a]",
			"k 10-30 ON_TIME first last i=0 ot=0 ts=29 [a b]",
			"k 20-40 ON_TIME first last i=0 ot=0 ts=39 [b]",
		},
	}, {
		name: "global",
		cfg:  Config{Window: coders.GlobalWindow},
		run:  []string{"add k g a 1", "add j g b 2", "add k g c 3", "hold", "wm inf", "done"},
		want: []string{
			"hold=eogw",
			"j g ON_TIME first last i=0 ot=0 ts=eogw [b]",
			"k g ON_TIME first last i=0 ot=0 ts=eogw [a c]",
			"done=true",
		},
	}})
}

func TestLateness(t *testing.T) {
	runScripts(t, []script{{
		// Default trigger with lateness: ON_TIME pane (not last), one LATE
		// pane per late element, nothing at GC, then data is dropped.
		name: "default",
		cfg:  withLateness(Config{Window: fixed}, 5000),
		run: []string{
			"add k 0-10000 a 1000", "wm 11000", "hold",
			"add k 0-10000 b 2000", "hold", "add k 0-10000 c 3000", "hold",
			"wm 15000", "wm 15001", "add k 0-10000 d 4000", "dropped", "hold", "done",
		},
		want: []string{
			"k 0-10000 ON_TIME first i=0 ot=0 ts=9999 [a]",
			"hold=inf",
			"k 0-10000 LATE i=1 ot=1 ts=9999 [b]",
			"hold=inf",
			"k 0-10000 LATE i=2 ot=2 ts=9999 [c]",
			"hold=inf",
			"dropped late=1 closed=0", "hold=inf", "done=true",
		},
	}, {
		// Never with lateness: late data waits for GC, holding the watermark
		// at the GC time; the final pane is ON_TIME (the first non-early one).
		name: "never",
		cfg:  withLateness(goSDK(tNever(), fixed), 5000),
		run:  []string{"add k 0-10000 a 1000", "hold", "wm 12000", "add k 0-10000 b 2000", "hold", "wm 15000", "wm 15001"},
		want: []string{
			"hold=9999", "hold=9999",
			"k 0-10000 ON_TIME first last i=0 ot=0 ts=9999 [a b]",
		},
	}, {
		// A window whose first element arrives after its end only gets LATE
		// panes; its hold is the GC time, as the pane is late already.
		name: "late birth",
		cfg:  withLateness(goSDK(tNever(), fixed), 5000),
		run:  []string{"wm 12000", "add k 0-10000 a 1000", "hold", "wm inf"},
		want: []string{"hold=14999", "k 0-10000 LATE first last i=0 ot=0 ts=9999 [a]"},
	}, {
		// EMIT_ALWAYS: an empty final pane at GC.
		name: "emit always",
		cfg: func() Config {
			c := withLateness(goSDK(tDefault(), fixed), 5000)
			c.Closing = pipepb.ClosingBehavior_EMIT_ALWAYS
			return c
		}(),
		run: []string{"add k 0-10000 a 1000", "wm 11000", "hold", "wm 15001"},
		want: []string{
			"k 0-10000 ON_TIME first i=0 ot=0 ts=9999 [a]",
			"hold=14999",
			"k 0-10000 LATE last i=1 ot=1 ts=9999 []",
		},
	}, {
		name: "dropped beyond lateness",
		cfg:  withLateness(Config{Window: fixed}, 100),
		run:  []string{"wm 10099", "add k 0-10000 a 1", "wm 10100", "add k 0-10000 b 2", "dropped", "wm inf"},
		want: []string{"k 0-10000 LATE first i=0 ot=0 ts=9999 [a]", "dropped late=1 closed=0"},
	}})
}

func TestAccumulation(t *testing.T) {
	trig := tRepeat(tCount(2))
	run := []string{
		"add k 0-100 a 1", "add k 0-100 b 2", "add k 0-100 c 3", "add k 0-100 d 4", "add k 0-100 e 5", "wm inf",
	}
	runScripts(t, []script{{
		name: "discarding",
		cfg:  goSDK(trig, fixed),
		run:  run,
		want: []string{
			"k 0-100 EARLY first i=0 ot=-1 ts=99 [a b]",
			"k 0-100 EARLY i=1 ot=-1 ts=99 [c d]",
			"k 0-100 ON_TIME last i=2 ot=0 ts=99 [e]",
		},
	}, {
		name: "accumulating",
		cfg:  accumulating(goSDK(trig, fixed)),
		run:  run,
		want: []string{
			"k 0-100 EARLY first i=0 ot=-1 ts=99 [a b]",
			"k 0-100 EARLY i=1 ot=-1 ts=99 [a b c d]",
			"k 0-100 ON_TIME last i=2 ot=0 ts=99 [a b c d e]",
		},
	}, {
		// Accumulating with nothing new at GC: FIRE_IF_NONEMPTY skips the pane,
		// FIRE_ALWAYS emits the on-time pane with the accumulated values.
		name: "accumulating nothing new",
		cfg:  accumulating(goSDK(trig, fixed)),
		run:  []string{"add k 0-100 a 1", "add k 0-100 b 2", "wm inf"},
		want: []string{"k 0-100 EARLY first i=0 ot=-1 ts=99 [a b]"},
	}, {
		name: "accumulating fire always",
		cfg: func() Config {
			c := accumulating(goSDK(trig, fixed))
			c.OnTime = pipepb.OnTimeBehavior_FIRE_ALWAYS
			return c
		}(),
		run: []string{"add k 0-100 a 1", "add k 0-100 b 2", "hold", "wm inf"},
		want: []string{
			"k 0-100 EARLY first i=0 ot=-1 ts=99 [a b]",
			"hold=99",
			"k 0-100 ON_TIME last i=1 ot=0 ts=99 [a b]",
		},
	}})
}

func TestOutputTime(t *testing.T) {
	run := []string{
		"add k 0-100 a 50", "add k 0-100 b 20", "add k 0-100 c 70", "hold",
		"wm 30", "add k 0-100 d 25", "add k 0-100 e 40", "hold", "wm inf", "hold",
	}
	runScripts(t, []script{{
		// d arrives behind the watermark: it does not hold the output.
		name: "earliest",
		cfg:  withOutputTime(Config{Window: fixed}, pipepb.OutputTime_EARLIEST_IN_PANE),
		run:  run,
		want: []string{"hold=20", "hold=20", "k 0-100 ON_TIME first last i=0 ot=0 ts=20 [a b c d e]", "hold=inf"},
	}, {
		name: "latest",
		cfg:  withOutputTime(Config{Window: fixed}, pipepb.OutputTime_LATEST_IN_PANE),
		run:  run,
		want: []string{"hold=70", "hold=70", "k 0-100 ON_TIME first last i=0 ot=0 ts=70 [a b c d e]", "hold=inf"},
	}, {
		// Early panes release the hold of the elements they emitted.
		name: "earliest early panes",
		cfg:  withOutputTime(goSDK(tRepeat(tCount(2)), fixed), pipepb.OutputTime_EARLIEST_IN_PANE),
		run:  []string{"add k 0-100 a 50", "add k 0-100 b 20", "hold", "add k 0-100 c 60", "hold", "add k 0-100 d 55", "hold"},
		want: []string{
			"k 0-100 EARLY first i=0 ot=-1 ts=20 [a b]", "hold=inf", "hold=60",
			"k 0-100 EARLY i=1 ot=-1 ts=55 [c d]", "hold=inf",
		},
	}})
}

func TestProcessingTime(t *testing.T) {
	runScripts(t, []script{{
		// Speculative results every second of processing time, then the
		// on-time pane (the classic early-firing streaming setup). With
		// FIRE_IF_NONEMPTY the on-time pane would be skipped: nothing new.
		name: "early firings",
		cfg: func() Config {
			c := accumulating(goSDK(tEOW(tPT(delay(1000)), nil), fixed))
			c.OnTime = pipepb.OnTimeBehavior_FIRE_ALWAYS
			return c
		}(),
		run: []string{
			"pt 0", "add k 0-10000 a 100 0", "wake", "add k 0-10000 b 200 500", "pt 999", "pt 1000", "wake",
			"add k 0-10000 c 300 1500", "wake", "pt 2500", "wm 10000", "wm 10001", "done",
		},
		want: []string{
			"wake=1000",
			"k 0-10000 EARLY first i=0 ot=-1 ts=9999 [a b]",
			"wake=none", "wake=2500",
			"k 0-10000 EARLY i=1 ot=-1 ts=9999 [a b c]",
			"k 0-10000 ON_TIME last i=2 ot=0 ts=9999 [a b c]",
			"done=true",
		},
	}, {
		// align_to rounds the target up to the next boundary.
		name: "align",
		cfg:  goSDK(tRepeat(tPT(delay(10), alignTo(1000, 0))), coders.GlobalWindow),
		run:  []string{"pt 0", "add k g a 1 0", "wake", "pt 999", "pt 1000", "add k g b 2 1995", "wake", "pt 2000", "wake"},
		want: []string{
			"wake=1000",
			"k g EARLY first i=0 ot=-1 ts=eogw [a]",
			"wake=3000",
			"wake=3000",
		},
	}, {
		// Late firings by processing time after the on-time pane.
		name: "late firings",
		cfg:  withLateness(goSDK(tEOW(nil, tPT(delay(100))), fixed), 1000),
		run: []string{
			"pt 0", "add k 0-100 a 1", "wm 100", "add k 0-100 b 2 10", "add k 0-100 c 3 50", "wake",
			"pt 110", "wm 1100",
		},
		want: []string{
			"k 0-100 ON_TIME first i=0 ot=0 ts=99 [a]",
			"wake=110",
			"k 0-100 LATE i=1 ot=1 ts=99 [b c]",
		},
	}})
}

func TestAlignUp(t *testing.T) {
	// The Go SDK's AlignToTransform doc: period 20, offset 45 aligns at
	// 5, 25, 45, ...: 0..5 -> 5, 6..25 -> 25.
	for in, want := range map[int64]int64{0: 5, 5: 5, 6: 25, 25: 25, 26: 45, -16: -15} {
		if got := alignUp(in, 20, 45); got != want {
			t.Errorf("alignUp(%d) = %d, want %d", in, got, want)
		}
	}
}

func TestSessions(t *testing.T) {
	runScripts(t, []script{{
		// Gap 10: [1,11) and [5,15) merge, [30,40) stays apart; touching
		// windows ([40,50)) do not merge. Values keep arrival order.
		name: "merge",
		cfg:  sessions(nil),
		run: []string{
			"add k 5-15 b 5", "add k 1-11 a 1", "add k 30-40 c 30", "add k 40-50 d 40", "add j 8-18 x 8",
			"hold", "wm inf", "done",
		},
		want: []string{
			"hold=14",
			"k 1-15 ON_TIME first last i=0 ot=0 ts=14 [b a]",
			"j 8-18 ON_TIME first last i=0 ot=0 ts=17 [x]",
			"k 30-40 ON_TIME first last i=0 ot=0 ts=39 [c]",
			"k 40-50 ON_TIME first last i=0 ot=0 ts=49 [d]",
			"done=true",
		},
	}, {
		// A new element bridging two sessions merges all three.
		name: "bridge",
		cfg:  sessions(nil),
		run:  []string{"add k 0-10 a 0", "add k 20-30 c 20", "add k 8-22 b 8", "wm inf"},
		want: []string{"k 0-30 ON_TIME first last i=0 ot=0 ts=29 [a c b]"},
	}, {
		// Trigger state merges: counts add up across merged sessions.
		name: "count merges",
		cfg:  sessions(tRepeat(tCount(3))),
		run:  []string{"add k 0-10 a 0", "add k 20-30 b 20", "add k 5-25 c 5", "add k 100-110 d 100", "wm inf"},
		want: []string{
			"k 0-30 EARLY first i=0 ot=-1 ts=29 [a b c]",
			"k 100-110 ON_TIME first last i=0 ot=0 ts=109 [d]",
		},
	}, {
		// A session that already fired grows into a new window whose end is
		// back ahead of the watermark: that window's panes are numbered
		// afresh, as Java's ReduceFnRunner numbers a new merge result.
		name: "growing session",
		cfg:  accumulating(sessions(tEOW(tCount(2), nil))),
		run: []string{
			"add k 0-10 a 0", "add k 2-12 b 2", "wm 11", "add k 9-19 c 9", "hold", "wm 19", "wm inf",
		},
		want: []string{
			"k 0-12 EARLY first i=0 ot=-1 ts=11 [a b]",
			"hold=18",
			"k 0-19 ON_TIME first last i=0 ot=0 ts=18 [a b c]",
		},
	}, {
		// A closed session leaves the merge set: new elements start afresh.
		name: "closed",
		cfg:  sessions(tCount(2)),
		run:  []string{"add k 0-10 a 0", "add k 1-11 b 1", "add k 5-15 c 5", "wm inf", "dropped"},
		want: []string{
			"k 0-11 EARLY first last i=0 ot=-1 ts=10 [a b]",
			"k 5-15 ON_TIME first last i=0 ot=0 ts=14 [c]",
			"dropped late=0 closed=0",
		},
	}})
}

func TestCompositeTriggers(t *testing.T) {
	runScripts(t, []script{{
		// AfterAll of once-triggers fires when the last is ready, then closes.
		name: "after all",
		cfg:  goSDK(tAll(tCount(2), tCount(3)), fixed),
		run:  []string{"add k 0-10 a 0", "add k 0-10 b 0", "add k 0-10 c 0", "add k 0-10 d 0", "dropped"},
		want: []string{"k 0-10 EARLY first last i=0 ot=-1 ts=9 [a b c]", "dropped late=0 closed=1"},
	}, {
		// AfterEach runs its subtriggers in turn and finishes after the last.
		name: "after each",
		cfg:  goSDK(tEach(tCount(2), tCount(1)), fixed),
		run:  []string{"add k 0-10 a 0", "add k 0-10 b 0", "add k 0-10 c 0", "add k 0-10 d 0", "dropped"},
		want: []string{
			"k 0-10 EARLY first i=0 ot=-1 ts=9 [a b]",
			"k 0-10 EARLY last i=1 ot=-1 ts=9 [c]",
			"dropped late=0 closed=1",
		},
	}, {
		// AfterEndOfWindow as AfterAll's watermark part.
		name: "count and watermark",
		cfg:  goSDK(tAll(tCount(2), tEOW(nil, nil)), fixed),
		run:  []string{"add k 0-10 a 0", "wm 20", "wm inf"},
		want: []string{"k 0-10 ON_TIME first last i=0 ot=0 ts=9 [a]"},
	}, {
		// With lateness the EOW part fires the count-satisfied AfterAll at
		// the end of the window, before GC.
		name: "count and watermark lateness",
		cfg:  withLateness(goSDK(tAll(tCount(2), tEOW(nil, nil)), fixed), 100),
		run:  []string{"add k 0-10 a 0", "add k 0-10 b 0", "wm 10", "add k 0-10 c 0", "dropped", "wm inf"},
		want: []string{"k 0-10 ON_TIME first last i=0 ot=0 ts=9 [a b]", "dropped late=0 closed=1"},
	}, {
		// Empty ON_TIME pane under FIRE_ALWAYS after discarding early panes.
		name: "empty on time",
		cfg: func() Config {
			c := withLateness(goSDK(tEOW(tCount(1), nil), fixed), 100)
			c.OnTime = pipepb.OnTimeBehavior_FIRE_ALWAYS
			return c
		}(),
		run: []string{"add k 0-10 a 0", "hold", "wm 10", "hold"},
		want: []string{
			"k 0-10 EARLY first i=0 ot=-1 ts=9 [a]",
			"hold=9",
			"k 0-10 ON_TIME last i=1 ot=0 ts=9 []",
			"hold=inf",
		},
	}})
}

func TestErrors(t *testing.T) {
	bad := []Config{
		{Accumulation: pipepb.AccumulationMode_RETRACTING},
		{Trigger: &pipepb.Trigger{}},
		{Trigger: tCount(0)},
		{Trigger: tAll()},
		{Trigger: tPT(alignTo(0, 0))},
		{Window: coders.OtherWindow},
		{Window: coders.GlobalWindow, Merging: true},
		{OutputTime: pipepb.OutputTime_Enum(42)},
	}
	for i, c := range bad {
		if _, err := New(c); err == nil {
			t.Errorf("config %d: New succeeded, want error", i)
		}
	}
	g, err := New(Config{Window: fixed})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range [][]byte{nil, {1, 2}, append(iw(0, 10), 0)} {
		if err := g.Add([]byte("k"), w, nil, 0, 0); err == nil {
			t.Errorf("Add with window %x succeeded", w)
		}
	}
	gg, _ := New(Config{})
	if err := gg.Add(nil, []byte{0}, nil, 0, 0); err == nil {
		t.Error("global GBK accepted a non-empty window")
	}
}

func TestAppendPane(t *testing.T) {
	p := Pane{
		Key: []byte{3, 'k', 'e', 'y'}, Window: iw(0, 10),
		Values:    [][]byte{{1, 'a'}, {1, 'b'}},
		Timestamp: 9,
		Info:      coders.PaneInfo{IsFirst: true, IsLast: true, Timing: coders.TimingOnTime},
	}
	want := coders.AppendWindowedValueHeader(nil, 9, 1, iw(0, 10), p.Info)
	want = append(want, 3, 'k', 'e', 'y', 0, 0, 0, 2, 1, 'a', 1, 'b')
	if got := AppendPane(nil, p); !bytes.Equal(got, want) {
		t.Errorf("AppendPane = %x, want %x", got, want)
	}
}

// TestPanesStayValid: panes returned earlier must not change when the GBK
// buffers more values (accumulating keeps appending to the same buffer).
func TestPanesStayValid(t *testing.T) {
	g, _ := New(accumulating(goSDK(tRepeat(tCount(1)), fixed)))
	_ = g.Add([]byte("k"), iw(0, 10), []byte("a"), 0, 0)
	first := g.Fire()
	_ = g.Add([]byte("k"), iw(0, 10), []byte("b"), 0, 0)
	second := g.Fire()
	if len(first) != 1 || len(first[0].Values) != 1 || string(first[0].Values[0]) != "a" {
		t.Fatalf("first pane changed: %+v", first)
	}
	if len(second) != 1 || len(second[0].Values) != 2 {
		t.Fatalf("second pane: %+v", second)
	}
}
