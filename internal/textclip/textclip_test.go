package textclip

import (
	"testing"
	"unicode/utf8"
)

func TestClip(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly", 7, "exactly"},
		{"abcdef", 3, "abc…"},
		{"añb", 2, "a…"},  // ñ is 2 bytes: not cut in half
		{"日本語", 4, "日…"},  // 3-byte characters
		{"日本語", 6, "日本…"}, // on a boundary
		{"x", 0, "…"},
		{"x", -1, "…"},
	} {
		got := Clip(tc.s, tc.n)
		if got != tc.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
		if !utf8.ValidString(got) {
			t.Errorf("Clip(%q, %d) = %q: invalid UTF-8", tc.s, tc.n, got)
		}
	}
}
