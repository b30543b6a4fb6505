package validates

import (
	"fmt"
	"strings"
)

// Summary counts one suite's outcomes, and how its expected tests fared.
type Summary struct {
	Suite                 string
	Pass, Fail, Skip      int
	Other                 int // incomplete (timed out, crashed)
	Expected, ExpectedMet int
}

// Summarize counts results by status; expected names the suite's required
// tests (a subset of all expected names is fine: only those in results'
// suite are looked up).
func Summarize(suite string, results []Result, expected []string) Summary {
	s := Summary{Suite: suite}
	byName := map[string]Status{}
	for _, r := range results {
		byName[r.Name] = r.Status
		switch r.Status {
		case Pass:
			s.Pass++
		case Fail:
			s.Fail++
		case Skip:
			s.Skip++
		default:
			s.Other++
		}
	}
	for _, n := range expected {
		s.Expected++
		if byName[n] == Pass {
			s.ExpectedMet++
		}
	}
	return s
}

// String is one line: "Go: 62 passed, 0 failed, 1 skipped; expected 62/62".
func (s Summary) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d passed, %d failed, %d skipped", s.Suite, s.Pass, s.Fail, s.Skip)
	if s.Other > 0 {
		fmt.Fprintf(&b, ", %d incomplete", s.Other)
	}
	fmt.Fprintf(&b, "; expected tests passing %d/%d", s.ExpectedMet, s.Expected)
	return b.String()
}
