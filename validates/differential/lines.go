// Package differential compares what a program wrote on the SDK's direct
// runner (the oracle) with what it wrote on the job server, and caches the
// oracle's output so repeated runs over the same input skip it.
package differential

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// ReadLines reads every shard matching prefix+"*" (Beam's text sinks name
// shards after the output prefix) and returns all lines, sorted: outputs
// compare as multisets because shard order and count vary by runner.
func ReadLines(prefix string) ([]string, error) {
	shards, err := filepath.Glob(prefix + "*")
	if err != nil {
		return nil, err
	}
	if len(shards) == 0 {
		return nil, fmt.Errorf("no output files match %s*", prefix)
	}
	var lines []string
	for _, s := range shards {
		if lines, err = appendLines(lines, s); err != nil {
			return nil, err
		}
	}
	sort.Strings(lines)
	return lines, nil
}

func appendLines(lines []string, path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return lines, nil
}

// DiffLines describes up to max differences between two sorted line
// lists, as lines only one side has ("-" want, "+" got); empty means equal.
func DiffLines(want, got []string, max int) []string {
	var out []string
	add := func(s string) bool {
		if len(out) == max {
			out = append(out, "...")
			return false
		}
		out = append(out, s)
		return true
	}
	i, j := 0, 0
	for i < len(want) || j < len(got) {
		switch {
		case j == len(got) || (i < len(want) && want[i] < got[j]):
			if !add("- " + want[i]) {
				return out
			}
			i++
		case i == len(want) || got[j] < want[i]:
			if !add("+ " + got[j]) {
				return out
			}
			j++
		default:
			i, j = i+1, j+1
		}
	}
	return out
}
