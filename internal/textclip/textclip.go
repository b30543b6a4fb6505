// Package textclip shortens text for logs and error messages without
// cutting a UTF-8 character in half (an SDK's message may be in any
// language, and a half character turns into U+FFFD or invalid UTF-8 in a
// proto string field).
package textclip

import "unicode/utf8"

// Clip returns s if it is at most n bytes long; otherwise its longest
// prefix of at most n bytes that ends on a character boundary, followed
// by "…".
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	n = max(n, 0)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
