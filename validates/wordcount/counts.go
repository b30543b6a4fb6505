package wordcount

import (
	"bufio"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Counts maps each word to its count.
type Counts map[string]int64

// ReadOutput reads every shard matching prefix+"*" (Beam's textio.Write
// names shards after the --output prefix) as "word: count" lines.
func ReadOutput(prefix string) (Counts, error) {
	shards, err := filepath.Glob(prefix + "*")
	if err != nil {
		return nil, err
	}
	if len(shards) == 0 {
		return nil, fmt.Errorf("no output files match %s*", prefix)
	}
	c := Counts{}
	for _, s := range shards {
		if err := c.readShard(s); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (c Counts) readShard(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		word, num, ok := strings.Cut(sc.Text(), ": ")
		v, err := strconv.ParseInt(num, 10, 64)
		if !ok || err != nil {
			return fmt.Errorf("%s:%d: not a \"word: count\" line: %q", path, n, sc.Text())
		}
		if _, dup := c[word]; dup {
			return fmt.Errorf("%s:%d: word %q written twice", path, n, word)
		}
		c[word] = v
	}
	return sc.Err()
}

// Total is the sum of all counts.
func (c Counts) Total() int64 {
	var t int64
	for _, v := range c {
		t += v
	}
	return t
}

// Diff describes up to max differences between want and got, in word
// order; empty means they are identical.
func Diff(want, got Counts, max int) []string {
	words := map[string]bool{}
	for w := range want {
		words[w] = true
	}
	for w := range got {
		words[w] = true
	}
	var out []string
	for _, w := range slices.Sorted(maps.Keys(words)) {
		a, inA := want[w]
		b, inB := got[w]
		if a == b && inA == inB {
			continue
		}
		if len(out) == max {
			out = append(out, "...")
			break
		}
		out = append(out, fmt.Sprintf("%q: want %s, got %s", w, show(a, inA), show(b, inB)))
	}
	return out
}

func show(v int64, ok bool) string {
	if !ok {
		return "absent"
	}
	return strconv.FormatInt(v, 10)
}
