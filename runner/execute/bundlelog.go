package execute

import (
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
		rs = append(rs, fmt.Sprintf("delay=%dms hold=%s", rd.Delay, wmText(rd.Hold)))
	}
	timers := 0
	for _, t := range b.Timers {
		timers += len(t)
	}
	n, lo, hi := ss.input.Span(b.Input)
	r.log.Debug("bundle committed", "stage", ss.stage.ID, "bundle", b.ID,
		"inputs", fmt.Sprintf("%d elems ts [%s, %s]", n, wmText(lo), wmText(hi)),
		"timer_bytes", timers, "outputs", strings.Join(outs, "; "), "residuals", strings.Join(rs, "; "))
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
