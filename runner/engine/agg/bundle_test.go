package agg

import "testing"

// Triggers are asked once per batch of input (BeginInput..EndInput), after
// all its elements, as Java's ReduceFnRunner does per bundle: Beam's
// test_after_count_trigger_batch, AfterCount(3) in fixed windows of 10,
// discarding. Seen at once, window [0,10) of A fires one pane of all five
// elements and window [10,20) its two at the end; seen element by element,
// AfterCount(3) fires after the third and finishes, dropping 4 and 5.
func TestTriggersAskedPerBatchOfInput(t *testing.T) {
	const w0, w1 = "0-10000", "10000-20000"
	cfg := goSDK(tCount(3), fixed)
	input := lines(adds("A", w0, "1000", "1"), adds("A", w0, "2000", "2"), adds("A", w0, "3000", "3"),
		adds("A", w0, "4000", "4"), adds("A", w0, "5000", "5"), adds("A", w1, "10000", "10"), adds("A", w1, "11000", "11"))
	runScripts(t, []script{{
		name: "batch",
		cfg:  cfg,
		run:  lines("begin", input, "end", "wm inf", "dropped", "done"),
		want: []string{
			"A 0-10000 EARLY first last i=0 ot=-1 ts=9999 [1 2 3 4 5]",
			"A 10000-20000 ON_TIME first last i=0 ot=0 ts=19999 [10 11]",
			"dropped late=0 closed=0",
			"done=true",
		},
	}, {
		name: "per element",
		cfg:  cfg,
		run:  lines(input, "wm inf", "dropped"),
		want: []string{
			"A 0-10000 EARLY first last i=0 ot=-1 ts=9999 [1 2 3]",
			"A 10000-20000 ON_TIME first last i=0 ot=0 ts=19999 [10 11]",
			"dropped late=0 closed=2",
		},
	}, {
		// The batch reaches w1 first: its panes come first.
		name: "order",
		cfg:  goSDK(tCount(1), fixed),
		run:  lines("begin", adds("B", w1, "12000", "x"), adds("A", w0, "1000", "y"), "end"),
		want: []string{
			"B 10000-20000 EARLY first last i=0 ot=-1 ts=19999 [x]",
			"A 0-10000 EARLY first last i=0 ot=-1 ts=9999 [y]",
		},
	}})
}
