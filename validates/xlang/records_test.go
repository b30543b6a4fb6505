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

func TestOrderedRecordsAreInTimeOrderOverEveryWindowAndKey(t *testing.T) {
	const n, windows, keys, windowMs, base = 100_000, 4, 500, 10_000, 1_700_000_000_000
	recs := orderedRecords(n, windows, keys, base, windowMs)
	for i := 1; i < len(recs); i++ {
		if recs[i].ts < recs[i-1].ts {
			t.Fatalf("record %d at %d, before record %d at %d", i, recs[i].ts, i-1, recs[i-1].ts)
		}
	}
	if first, last := recs[0].ts, recs[n-1].ts; first != base || last >= base+windows*windowMs {
		t.Errorf("records span [%d, %d], want within [%d, %d)", first, last, base, base+windows*windowMs)
	}
	counts := expectedCounts(recs, windowMs)
	if len(counts) != windows*keys {
		t.Errorf("%d key-window counts, want %d", len(counts), windows*keys)
	}
	total, seen := 0, map[int]bool{}
	for _, line := range counts {
		var key string
		var start int64
		var c int
		if _, err := fmt.Sscan(line, &key, &start, &c); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		total += c
		seen[c] = true
	}
	if total != n {
		t.Errorf("counts add up to %d, want %d", total, n)
	}
	// Uneven counts: a sink that swapped two keys' counts would show.
	if len(seen) < 3 {
		t.Errorf("only %d distinct counts per key and window, want uneven ones", len(seen))
	}
}

func TestShardSeqsSumsTheShardsRecords(t *testing.T) {
	out := "0\t{\"seq\":151,\"id\":\"2985603A - 2026-12-02 10:00:35\"}\n1\t{\"seq\":9,\"id\":\"x\"}\n"
	if got, err := shardSeqs(out); err != nil || got != 162 {
		t.Errorf("shardSeqs = %d, %v; want 162", got, err)
	}
	for _, bad := range []string{"0\t{}", "nonsense", "0\t{\"seq\":x}"} {
		if _, err := shardSeqs(bad); err == nil {
			t.Errorf("shardSeqs(%q) took it", bad)
		}
	}
}
