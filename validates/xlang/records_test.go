package xlang

import (
	"fmt"
	"strings"
	"testing"
)

func TestCountRecordsStayInTheirWindows(t *testing.T) {
	const windowMs, base = 10_000, 1_700_000_000_000
	recs := countRecords(300, 3, base, windowMs)
	total := 0
	for _, line := range expectedCounts(recs, windowMs) {
		var key string
		var start int64
		var n int
		if _, err := fmt.Sscan(line, &key, &start, &n); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if start < base || start >= base+3*windowMs || (start-base)%windowMs != 0 {
			t.Errorf("line %q: window start outside the three windows", line)
		}
		total += n
	}
	if total != 300 {
		t.Errorf("counts add up to %d, want 300", total)
	}
	// Three windows of three keys each.
	if got := len(expectedCounts(recs, windowMs)); got != 9 {
		t.Errorf("%d key-window counts, want 9", got)
	}
}

func TestExpectedCountsCountsPerKeyAndWindow(t *testing.T) {
	recs := []record{{ts: 1000, key: "a"}, {ts: 1999, key: "a"}, {ts: 2000, key: "a"}, {ts: 1500, key: "b"}}
	got := strings.Join(expectedCounts(recs, 1000), ";")
	want := "a\t1000 2;a\t2000 1;b\t1000 1"
	if got != want {
		t.Errorf("expectedCounts = %q, want %q", got, want)
	}
}

func TestDiffLinesNamesMissingExtraAndDuplicates(t *testing.T) {
	if d := diffLines([]string{"a", "b"}, []string{"a", "b"}); d != "" {
		t.Errorf("equal lists differ: %s", d)
	}
	d := diffLines([]string{"a", "a", "c"}, []string{"a", "b"})
	if !strings.Contains(d, `missing ["b"]`) || !strings.Contains(d, `unexpected ["a" "c"]`) {
		t.Errorf("diffLines = %s", d)
	}
}

func TestProducerInputAndConsumedLinesRoundTrip(t *testing.T) {
	in := producerInput([]record{{ts: 5, key: "k", value: "v"}})
	if in != "5\tk\tv\n" {
		t.Errorf("producerInput = %q", in)
	}
	if got := consumedLines("b\t2\n\na\t1\n"); strings.Join(got, ",") != "a\t1,b\t2" {
		t.Errorf("consumedLines = %q", got)
	}
}
