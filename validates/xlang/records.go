package xlang

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// record is one Kafka record the test produces: its create time in
// milliseconds, key and value.
type record struct {
	ts         int64
	key, value string
}

// countKeys are the input's keys, with uneven frequencies (a:1, b:2, c:3
// of every six records), so a count that mixes keys up shows.
var countKeys = []string{"a", "b", "b", "c", "c", "c"}

// countRecords makes n records spread over windows fixed windows of
// windowMs each, starting at base (a multiple of windowMs): record i is in
// window (i/7)%windows, at an offset within it that varies with i.
func countRecords(n, windows int, base, windowMs int64) []record {
	out := make([]record, n)
	for i := range out {
		w := int64((i / 7) % windows)
		out[i] = record{
			ts:    base + w*windowMs + int64(i*37)%windowMs,
			key:   countKeys[i%len(countKeys)],
			value: "v" + strconv.Itoa(i),
		}
	}
	return out
}

// producerInput is what KafkaRecords.java produce reads: one
// "TIMESTAMP_MS<TAB>KEY<TAB>VALUE" line per record.
func producerInput(recs []record) string {
	var b strings.Builder
	for _, r := range recs {
		fmt.Fprintf(&b, "%d\t%s\t%s\n", r.ts, r.key, r.value)
	}
	return b.String()
}

// expectedCounts is what the pipeline writes for recs, as the consumer
// prints it: one "KEY<TAB>WINDOW_START_MS COUNT" line per key and window,
// sorted.
func expectedCounts(recs []record, windowMs int64) []string {
	type kw struct {
		key   string
		start int64
	}
	counts := map[kw]int{}
	for _, r := range recs {
		counts[kw{r.key, r.ts - r.ts%windowMs}]++
	}
	var out []string
	for k, n := range counts {
		out = append(out, fmt.Sprintf("%s\t%d %d", k.key, k.start, n))
	}
	slices.Sort(out)
	return out
}

// consumedLines splits the consumer's output into its records' lines,
// sorted.
func consumedLines(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if l != "" {
			lines = append(lines, l)
		}
	}
	slices.Sort(lines)
	return lines
}

// diffLines says how got differs from want (both sorted), or "" when
// they are equal: missing and unexpected lines, duplicates included.
func diffLines(got, want []string) string {
	var missing, extra []string
	i, j := 0, 0
	for i < len(got) || j < len(want) {
		switch {
		case j == len(want) || (i < len(got) && got[i] < want[j]):
			extra = append(extra, got[i])
			i++
		case i == len(got) || want[j] < got[i]:
			missing = append(missing, want[j])
			j++
		default:
			i++
			j++
		}
	}
	if len(missing) == 0 && len(extra) == 0 {
		return ""
	}
	return fmt.Sprintf("missing %q, unexpected %q", missing, extra)
}

// orderedRecords makes n records over windows fixed windows of windowMs
// each, starting at base (a multiple of windowMs), in create-time order
// (a watermark that follows each partition's records then drops none):
// record i at base + i*windows*windowMs/n. Its key is one of keys, by a
// rule that gives them uneven counts per window.
func orderedRecords(n, windows, keys int, base, windowMs int64) []record {
	out := make([]record, n)
	span := int64(windows) * windowMs
	for i := range out {
		k := (i*31 + i/97) % keys
		out[i] = record{
			ts:    base + int64(i)*span/int64(n),
			key:   fmt.Sprintf("k%03d", k),
			value: "v" + strconv.Itoa(i),
		}
	}
	return out
}

// shardSeqs reads what KafkaRecords.java committed prints for KafkaIO's
// exactly-once sink, "PARTITION<TAB>{"seq":N,"id":"..."}" per shard, and
// returns how many records the shards have committed in all: each seq is
// the last record id written, counted from 0.
func shardSeqs(out string) (int64, error) {
	var total int64
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		_, meta, ok := strings.Cut(line, "\t")
		i := strings.Index(meta, `"seq":`)
		if !ok || i < 0 {
			return 0, fmt.Errorf("shard metadata %q: want PARTITION<TAB>{\"seq\":N,...}", line)
		}
		digits := meta[i+len(`"seq":`):]
		if j := strings.IndexFunc(digits, func(r rune) bool { return r < '0' || r > '9' }); j >= 0 {
			digits = digits[:j]
		}
		seq, err := strconv.ParseInt(digits, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("shard metadata %q: %v", line, err)
		}
		total += seq + 1
	}
	return total, nil
}

// shortDiff is diffLines cut to its first n characters.
func shortDiff(got, want []string, n int) string {
	d := diffLines(got, want)
	if len(d) > n {
		d = d[:n] + "..."
	}
	return d
}
