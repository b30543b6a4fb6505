package harness

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
		want      SDKCause
	}{
		{"python import error", file("python_missing_module.txt"),
			SDKCause{Headline: "ModuleNotFoundError: No module named 'secretmod'"}},
		{"python chained exceptions", file("python_chained.txt"),
			SDKCause{Headline: "ValueError: record 1 has no field [while running 'Parse records']"}},
		{"python exception without message", "Traceback (most recent call last):\n  File \"x.py\", line 1, in f\n    raise KeyboardInterrupt\nKeyboardInterrupt\n",
			SDKCause{Headline: "KeyboardInterrupt"}},
		{"python multi-line message", "Traceback (most recent call last):\n  File \"x.py\", line 1, in f\nValueError: first\nsecond\n",
			SDKCause{Headline: "ValueError: first"}},
		{"python traceback cut short", "Traceback (most recent call last):\n  File \"x.py\", line 1, in f\n    g()\n",
			SDKCause{Headline: "g()"}},
		{"go DoFn error", file("go_dofn.txt"),
			SDKCause{Headline: `user DoFn failed on "boom"`, Transform: "e3"}},
		{"go passert failure", file("go_passert.txt"),
			SDKCause{Headline: "actual PCollection does not match expected values", Transform: "e8"}},
		{"go panic", file("go_panic.txt"),
			SDKCause{Headline: "panic: runtime error: index out of range [4] with length 0"}},
		{"one line", "worker ran out of memory", SDKCause{Headline: "worker ran out of memory"}},
		{"empty", "", SDKCause{}},
		{"long", strings.Repeat("x", 1000), SDKCause{Headline: strings.Repeat("x", maxHeadline) + "…"}},
	} {
		if got := ParseSDKError(tc.msg); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
