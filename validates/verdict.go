package validates

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// Verdict compares results with the expected list. Only expected tests can
// fail the run: other tests (run via --also) are informational.
type Verdict struct {
	Failed   []string // expected, and failed or never finished
	Skipped  []string // expected, and skipped: a skip is not a pass
	NotRun   []string // expected, with no result at all
	Unlisted []string // passed but not expected: candidates for the list
}

// OK reports whether every expected test passed.
func (v Verdict) OK() bool {
	return len(v.Failed)+len(v.Skipped)+len(v.NotRun) == 0
}

// Decide classifies results against the expected names.
func Decide(expected []string, results []Result) Verdict {
	byName := map[string]Result{}
	for _, r := range results {
		byName[r.Name] = r
	}
	var v Verdict
	for _, name := range expected {
		r, ok := byName[name]
		switch {
		case !ok:
			v.NotRun = append(v.NotRun, name)
		case r.Status == Skip:
			v.Skipped = append(v.Skipped, name)
		case r.Status != Pass:
			v.Failed = append(v.Failed, name)
		}
	}
	v.Unlisted = unlistedPasses(expected, results)
	return v
}

// unlistedPasses returns passing tests not in expected. Subtests are left out
// when their parent is listed: the list tracks tests at the level it names.
func unlistedPasses(expected []string, results []Result) []string {
	listed := map[string]bool{}
	for _, n := range expected {
		listed[n] = true
	}
	var out []string
	for _, r := range results {
		top, _, _ := strings.Cut(r.Name, "/")
		if r.Status == Pass && !listed[r.Name] && !listed[top] {
			out = append(out, r.Name)
		}
	}
	sort.Strings(out)
	return out
}

// String summarises the verdict in a few lines, naming every problem test.
func (v Verdict) String() string {
	var b strings.Builder
	line := func(label string, names []string) {
		if len(names) > 0 {
			fmt.Fprintf(&b, "%s (%d): %s\n", label, len(names), strings.Join(names, " "))
		}
	}
	line("expected but FAILED", v.Failed)
	line("expected but SKIPPED", v.Skipped)
	line("expected but DID NOT RUN", v.NotRun)
	line("passed but not listed (add them to the list?)", v.Unlisted)
	if v.OK() {
		b.WriteString("all expected tests passed\n")
	}
	return b.String()
}

// WriteTable prints every result with its time, plus a NOT RUN row for each
// expected test that produced no result, marking which tests are expected.
func WriteTable(w io.Writer, expected []string, results []Result) error {
	listed := map[string]bool{}
	for _, n := range expected {
		listed[n] = true
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TEST\tRESULT\tTIME\tEXPECTED")
	seen := map[string]bool{}
	for _, r := range results {
		seen[r.Name] = true
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Name, r.Status, r.Elapsed.Round(10*time.Millisecond), yes(listed[r.Name]))
	}
	for _, n := range expected {
		if !seen[n] {
			fmt.Fprintf(tw, "%s\t%s\t-\t%s\n", n, NotRun, yes(true))
		}
	}
	return tw.Flush()
}

func yes(b bool) string {
	if b {
		return "yes"
	}
	return ""
}
