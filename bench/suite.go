package bench

import (
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/beam-runner/beam-runner/validates"
)

// SuiteRun is one runner's run of a test suite: each test's outcome and
// time, and the wall time of the whole run.
type SuiteRun struct {
	Runner  string
	Wall    time.Duration
	Results []validates.Result
}

// passed is the set of tests that passed in the run.
func (r SuiteRun) passed() map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, res := range r.Results {
		if res.Status == validates.Pass {
			out[res.Name] = res.Elapsed
		}
	}
	return out
}

// SuiteComparison is a runner's suite set beside a peer's: what each passed,
// what only one passed, and the per-test medians on the tests both passed
// (so neither side's median counts a failure's time).
type SuiteComparison struct {
	Ours, Peer             SuiteRun
	OursPassed, PeerPassed int
	OnlyPeer, OnlyOurs     []string // passed by one side and not by the other
	Both                   int
	OursMedian, PeerMedian time.Duration
	OursTotal, PeerTotal   time.Duration // sums of per-test times on Both
	OursFailed, PeerFailed []string
}

// CompareSuites compares ours against peer, test by test.
func CompareSuites(ours, peer SuiteRun) SuiteComparison {
	op, pp := ours.passed(), peer.passed()
	c := SuiteComparison{Ours: ours, Peer: peer, OursPassed: len(op), PeerPassed: len(pp)}
	var oursBoth, peerBoth []time.Duration
	for name, d := range op {
		pd, ok := pp[name]
		if !ok {
			c.OnlyOurs = append(c.OnlyOurs, name)
			continue
		}
		c.Both++
		oursBoth, peerBoth = append(oursBoth, d), append(peerBoth, pd)
		c.OursTotal += d
		c.PeerTotal += pd
	}
	for name := range pp {
		if _, ok := op[name]; !ok {
			c.OnlyPeer = append(c.OnlyPeer, name)
		}
	}
	c.OursMedian, c.PeerMedian = Median(oursBoth), Median(peerBoth)
	c.OursFailed, c.PeerFailed = failed(ours), failed(peer)
	slices.Sort(c.OnlyOurs)
	slices.Sort(c.OnlyPeer)
	return c
}

// failed lists the tests of a run that failed or never finished (not skips:
// a test skipped by its own assumption is neither side's doing).
func failed(r SuiteRun) []string {
	var out []string
	for _, res := range r.Results {
		if res.Status != validates.Pass && res.Status != validates.Skip {
			out = append(out, res.Name)
		}
	}
	slices.Sort(out)
	return out
}

// WriteSuiteComparison writes the comparison as a markdown table and lists.
func WriteSuiteComparison(w io.Writer, c SuiteComparison) {
	o, p := c.Ours.Runner, c.Peer.Runner
	fmt.Fprintf(w, "| | %s | %s | %s/%s |\n|---|---|---|---|\n", o, p, o, p)
	fmt.Fprintf(w, "| tests run | %d | %d | |\n", len(c.Ours.Results), len(c.Peer.Results))
	fmt.Fprintf(w, "| passed | %d | %d | |\n", c.OursPassed, c.PeerPassed)
	fmt.Fprintf(w, "| wall time | %s | %s | %s |\n", FormatDuration(c.Ours.Wall), FormatDuration(c.Peer.Wall), Ratio(c.Ours.Wall, c.Peer.Wall))
	fmt.Fprintf(w, "| median per test (the %d both passed) | %s | %s | %s |\n", c.Both,
		FormatDuration(c.OursMedian), FormatDuration(c.PeerMedian), Ratio(c.OursMedian, c.PeerMedian))
	fmt.Fprintf(w, "| sum of per-test times (same tests) | %s | %s | %s |\n",
		FormatDuration(c.OursTotal), FormatDuration(c.PeerTotal), Ratio(c.OursTotal, c.PeerTotal))
	writeList(w, "passed by "+p+" only", c.OnlyPeer)
	writeList(w, "passed by "+o+" only", c.OnlyOurs)
	writeList(w, "failed on "+o, c.OursFailed)
	writeList(w, "failed on "+p, c.PeerFailed)
}

func writeList(w io.Writer, title string, names []string) {
	fmt.Fprintf(w, "\n%s (%d)\n", title, len(names))
	for _, n := range names {
		fmt.Fprintf(w, "- %s\n", n)
	}
}
