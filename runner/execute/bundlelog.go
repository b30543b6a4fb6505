package execute

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/runner/engine"
)

// logCommit writes, at debug level, what a committed bundle carried: its
// input and timers, its outputs per PCollection (how many, the span of
// their event times, the PCollection's watermark after the commit), and its residuals' resume delays and watermark holds.
// It is how one tells, from the server's log alone, whether a splittable
// DoFn's resume delay was asked for and kept, and where its watermark
// estimate held its output.
func (r *run) logCommit(eng *engine.Engine, ss *sdkStage, b engine.Bundle, res engine.Result) {
	if !r.log.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	var outs []string
	for pc, chunks := range res.Data {
		c, err := r.sinkCodecs.Of(pc)
		if err != nil {
			continue
		}
		n, lo, hi := c.Span(chunks)
		outs = append(outs, fmt.Sprintf("%s: %d elems ts [%s, %s] wm %s", pc, n,
			wmText(lo), wmText(hi), wmText(eng.Watermark(pc))))
	}
	sort.Strings(outs)
	var rs []string
	for _, rd := range res.Residuals {
		hold := "its element's timestamp"
		if rd.Held {
			hold = wmText(rd.Hold)
		}
		rs = append(rs, fmt.Sprintf("delay=%dms hold=%s", rd.Delay, hold))
	}
	var tin, tout []string
	for _, tf := range ss.stage.Timers {
		ts := engine.TimerStream{Transform: tf.Transform, Family: tf.Family}
		if in := b.Timers[ts]; len(in) > 0 {
			tin = append(tin, r.timersText(tf.Family, tf.Coder, in))
		}
		if set := res.Timers[ts]; len(set) > 0 {
			tout = append(tout, r.timersText(tf.Family, tf.Coder, bytes.Join(set, nil)))
		}
	}
	n, lo, hi := ss.input.Span(b.Input)
	r.log.Debug("bundle committed", "stage", ss.stage.ID, "bundle", b.ID,
		"inputs", fmt.Sprintf("%d elems ts [%s, %s]", n, wmText(lo), wmText(hi)),
		"timers_in", strings.Join(tin, "; "), "timers_set", strings.Join(tout, "; "),
		"outputs", strings.Join(outs, "; "), "residuals", strings.Join(rs, "; "))
}

// timersText is a family's encoded timers in brief: how many set, the
// span of their fire and hold times, how many cleared.
func (r *run) timersText(family, coder string, b []byte) string {
	c, err := coders.CompileTimer(r.plan.Components.GetCoders(), coder)
	if err != nil {
		return family + ": " + err.Error()
	}
	var set, cleared int
	var f0, f1, h0, h1 int64
	for off := 0; off < len(b); {
		var t coders.Timer
		k, err := c.Parse(b[off:], &t)
		if err != nil {
			return fmt.Sprintf("%s: at byte %d: %v", family, off, err)
		}
		off += k
		if t.Clear {
			cleared++
			continue
		}
		if set == 0 {
			f0, f1, h0, h1 = t.Fire, t.Fire, t.Hold, t.Hold
		}
		f0, f1, h0, h1 = min(f0, t.Fire), max(f1, t.Fire), min(h0, t.Hold), max(h1, t.Hold)
		set++
	}
	return fmt.Sprintf("%s: %d set fire [%s, %s] hold [%s, %s], %d cleared", family, set,
		wmText(f0), wmText(f1), wmText(h0), wmText(h1), cleared)
}

// wmText is a watermark or hold in milliseconds as a UTC time, or its
// name at the ends of time (0 is a residual's hold at its element's
// timestamp).
func wmText(ms int64) string {
	switch {
	case ms == 0:
		return "0"
	case ms <= coders.MinTimestamp:
		return "-inf"
	case ms >= coders.MaxTimestamp:
		return "+inf"
	case ms >= coders.EndOfGlobalWindow:
		return "end-of-global"
	}
	return time.UnixMilli(ms).UTC().Format("15:04:05.000")
}
