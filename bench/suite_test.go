package bench

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/beam-runner/beam-runner/validates"
)

func res(name string, st validates.Status, secs float64) validates.Result {
	return validates.Result{Name: name, Status: st, Elapsed: time.Duration(secs * float64(time.Second))}
}

func TestCompareSuites(t *testing.T) {
	ours := SuiteRun{Runner: "br", Wall: 80 * time.Second, Results: []validates.Result{
		res("A/a", validates.Pass, 1), res("A/b", validates.Pass, 3), res("A/c", validates.Fail, 9),
		res("B/a", validates.Pass, 2), res("B/s", validates.Skip, 0),
	}}
	peer := SuiteRun{Runner: "prism", Wall: 100 * time.Second, Results: []validates.Result{
		res("A/a", validates.Pass, 2), res("A/b", validates.Pass, 4), res("A/c", validates.Pass, 1),
		res("B/a", validates.Fail, 30), res("B/s", validates.Skip, 0),
	}}
	c := CompareSuites(ours, peer)
	if c.OursPassed != 3 || c.PeerPassed != 3 || c.Both != 2 {
		t.Errorf("passed %d/%d, both %d; want 3/3, both 2", c.OursPassed, c.PeerPassed, c.Both)
	}
	if !slices.Equal(c.OnlyPeer, []string{"A/c"}) || !slices.Equal(c.OnlyOurs, []string{"B/a"}) {
		t.Errorf("only peer %v, only ours %v", c.OnlyPeer, c.OnlyOurs)
	}
	// Medians over A/a and A/b only: a failure's time counts on neither side.
	if c.OursMedian != 2*time.Second || c.PeerMedian != 3*time.Second {
		t.Errorf("medians %v / %v, want 2s / 3s", c.OursMedian, c.PeerMedian)
	}
	if !slices.Equal(c.OursFailed, []string{"A/c"}) || !slices.Equal(c.PeerFailed, []string{"B/a"}) {
		t.Errorf("failed %v / %v", c.OursFailed, c.PeerFailed)
	}
	var out bytes.Buffer
	WriteSuiteComparison(&out, c)
	for _, want := range []string{"| wall time | 80.0s | 100.0s | 0.80x |", "passed by prism only (1)\n- A/c"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
