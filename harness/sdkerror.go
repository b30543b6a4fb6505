package harness

import (
	"regexp"
	"strings"

	"github.com/beam-runner/beam-runner/internal/textclip"
)

// SDKCause is what a user should read first of an SDK's bundle error: the
// exception or error itself, not the frames and plan printed around it.
type SDKCause struct {
	Headline  string // one line; "" if the message has none
	Transform string // id of the failing transform, when the message names it
}

// maxHeadline bounds the headline: an exception's message may carry a
// whole record.
const maxHeadline = 400

// Cause is what a user should read first of the SDK's message.
func (e *BundleError) Cause() SDKCause { return ParseSDKError(e.Msg) }

// ParseSDKError finds the cause in an SDK's error message:
//   - a Python traceback ends with its exception's "Type: message" line;
//     with chained exceptions ("During handling of the above exception
//     ...") the last traceback's is the one raised;
//   - a Go SDK error puts a top-level message (a panic's) on its first
//     line, before "Full error:"; otherwise its root error follows the
//     last "caused by:", under a line naming the DoFn and its transform.
func ParseSDKError(msg string) SDKCause {
	lines := strings.Split(strings.TrimRight(msg, "\n"), "\n")
	c, ok := pythonCause(lines)
	if !ok {
		c = goCause(lines)
	}
	c.Headline = textclip.Clip(c.Headline, maxHeadline)
	return c
}

const pyTraceback = "Traceback (most recent call last):"

func pythonCause(lines []string) (SDKCause, bool) {
	last := -1
	for i, l := range lines {
		if strings.HasSuffix(strings.TrimRight(l, " "), pyTraceback) {
			last = i
		}
	}
	if last < 0 {
		return SDKCause{}, false
	}
	// Frames and their source lines are indented; the exception is not.
	for _, l := range lines[last+1:] {
		if l != "" && !strings.HasPrefix(l, " ") && !strings.HasPrefix(l, "\t") {
			return SDKCause{Headline: l}, true
		}
	}
	return SDKCause{Headline: strings.TrimSpace(lastNonEmpty(lines))}, true // cut short
}

var (
	goBundlePrefix = regexp.MustCompile(`^process bundle failed for instruction \S+ using plan \S+ : `)
	goDoFnLine     = regexp.MustCompile(`^DoFn\[UID:\d+, PID:([^,\]]+), Name: [^\]]*\] failed:$`)
	goPanicStack   = regexp.MustCompile(` goroutine \d+ \[running\]:$`)
)

func goCause(lines []string) SDKCause {
	clean := func(l string) string {
		return strings.TrimSpace(goPanicStack.ReplaceAllString(goBundlePrefix.ReplaceAllString(l, ""), ""))
	}
	if len(lines) > 1 && lines[1] == "Full error:" {
		return SDKCause{Headline: clean(lines[0])}
	}
	var c SDKCause
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.TrimSpace(lines[i]) != "caused by:" {
			continue
		}
		rest := lines[i+1:]
		if len(rest) > 0 {
			if m := goDoFnLine.FindStringSubmatch(rest[0]); m != nil {
				c.Transform, rest = m[1], rest[1:]
			}
		}
		if c.Headline = clean(firstNonEmpty(rest)); c.Headline != "" {
			return c
		}
		break
	}
	c.Headline = clean(firstNonEmpty(lines))
	return c
}

func firstNonEmpty(lines []string) string {
	for _, l := range lines {
		if strings.TrimSpace(l) != "" {
			return l
		}
	}
	return ""
}

func lastNonEmpty(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.TrimSpace(lines[i]) != "" {
			return lines[i]
		}
	}
	return ""
}
