package execute

import (
	"os"
	"strings"
	"testing"
)

// TestParseSDKError reads the cause out of real SDK errors (testdata/
// sdkerrors: Python 3.11 with Beam 2.77, and Go SDK 2.77 errors captured
// from this runner's jobs) and a few made-up shapes.
func TestParseSDKError(t *testing.T) {
	file := func(name string) string {
		b, err := os.ReadFile("testdata/sdkerrors/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, tc := range []struct {
		name, msg string
		want      sdkCause
	}{
		{"python import error", file("python_missing_module.txt"),
			sdkCause{Headline: "ModuleNotFoundError: No module named 'secretmod'"}},
		{"python chained exceptions", file("python_chained.txt"),
			sdkCause{Headline: "ValueError: record 1 has no field [while running 'Parse records']"}},
		{"python exception without message", "Traceback (most recent call last):\n  File \"x.py\", line 1, in f\n    raise KeyboardInterrupt\nKeyboardInterrupt\n",
			sdkCause{Headline: "KeyboardInterrupt"}},
		{"python multi-line message", "Traceback (most recent call last):\n  File \"x.py\", line 1, in f\nValueError: first\nsecond\n",
			sdkCause{Headline: "ValueError: first"}},
		{"python traceback cut short", "Traceback (most recent call last):\n  File \"x.py\", line 1, in f\n    g()\n",
			sdkCause{Headline: "g()"}},
		{"go DoFn error", file("go_dofn.txt"),
			sdkCause{Headline: `user DoFn failed on "boom"`, Transform: "e3"}},
		{"go passert failure", file("go_passert.txt"),
			sdkCause{Headline: "actual PCollection does not match expected values", Transform: "e8"}},
		{"go panic", file("go_panic.txt"),
			sdkCause{Headline: "panic: runtime error: index out of range [4] with length 0"}},
		{"one line", "worker ran out of memory", sdkCause{Headline: "worker ran out of memory"}},
		{"empty", "", sdkCause{}},
		{"long", strings.Repeat("x", 1000), sdkCause{Headline: strings.Repeat("x", maxHeadline) + "…"}},
	} {
		if got := parseSDKError(tc.msg); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
