package bench

import (
	"regexp"
	"strings"
	"time"

	"github.com/beam-runner/beam-runner/internal/textclip"
)

// runtimeRe matches load.PublishMetrics' only output line, logged as
// `msg="runtime 1.23s"` by the SDK's slog logger (or `runtime 1.23s` by the
// standard logger).
var runtimeRe = regexp.MustCompile(`\bruntime ([0-9.]+(?:ns|us|µs|ms|s|m|h)[0-9.a-zµ]*)`)

// ParseRuntime returns the runtime the load test computed from its
// RuntimeMonitor distribution (first to last bundle), and whether it
// printed one: "No metrics returned." means the runner returned no metrics.
func ParseRuntime(out string) (time.Duration, bool) {
	m := runtimeRe.FindStringSubmatch(out)
	if m == nil {
		return 0, false
	}
	d, err := time.ParseDuration(m[1])
	if err != nil {
		return 0, false
	}
	return d, true
}

// planLineRe matches the numbered plan dump ("  6: ParDo[...]") the Go SDK
// puts in bundle errors; it buries the cause, so excerpts drop it.
var planLineRe = regexp.MustCompile(`^\s*\d+: `)

// errorMarkers start the interesting part of a failed program's output.
var errorMarkers = []string{"panic: ", "fatal error: ", "level=ERROR", "Failed to execute job"}

// ErrorExcerpt condenses a failed program's output to its error: from the
// first panic, fatal or failure line up to a stack trace, without the plan
// dump, on one line. Logged messages carry their newlines escaped, so they
// are unescaped first.
func ErrorExcerpt(out string) string {
	out = strings.NewReplacer(`\n`, "\n", `\t`, "\t", `\"`, `"`).Replace(out)
	lines := strings.Split(out, "\n")
	start := firstMarker(lines)
	var keep []string
	for _, l := range lines[start:] {
		l = strings.TrimSpace(l)
		if i := strings.Index(" "+l, " goroutine "); i >= 0 || l == "runtime stack:" {
			// The SDK sometimes glues a stack trace onto its message's line.
			if i > 0 {
				keep = append(keep, strings.TrimSpace(l[:i-1]))
			}
			break
		}
		if l != "" && !planLineRe.MatchString(l) {
			keep = append(keep, l)
		}
	}
	return textclip.Clip(strings.Join(keep, " "), 600)
}

// firstMarker is the index of the first error line, or of the last few
// lines when there is none (they say most about an unexpected exit).
func firstMarker(lines []string) int {
	for i, l := range lines {
		for _, m := range errorMarkers {
			if strings.Contains(l, m) {
				return i
			}
		}
	}
	return max(0, len(lines)-6)
}
