package bench

import (
	"regexp"
	"strings"
	"time"
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

// ErrorExcerpt condenses a failed program's output to its error: from the
// panic or fatal line to the stack trace, without the plan dump, on one line.
func ErrorExcerpt(out string) string {
	lines := strings.Split(out, "\n")
	start := max(0, len(lines)-6) // no marker: the last lines say most
	for i, l := range lines {
		if strings.HasPrefix(l, "panic: ") || strings.Contains(l, "level=ERROR") ||
			strings.Contains(l, "Failed to execute job") {
			start = i
			break
		}
	}
	var keep []string
	for _, l := range lines[start:] {
		if strings.HasPrefix(l, "goroutine ") {
			break
		}
		if l = strings.TrimSpace(l); l != "" && !planLineRe.MatchString(l) {
			keep = append(keep, l)
		}
	}
	return truncate(strings.Join(keep, " "), 600)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
