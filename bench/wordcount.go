package bench

import (
	"bufio"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// vocabulary is large enough that grouping is real work, and Zipf-skewed
// like natural text so a few keys are hot.
const vocabulary = 50000

// TextPath is where the generated input of a given size lives; the name
// carries the generator version so a changed generator never reuses old text.
func TextPath(workDir string, mb int64) string {
	return filepath.Join(workDir, fmt.Sprintf("wordcount-v1-%dMB.txt", mb))
}

// GenerateText writes about mb MiB of deterministic text to path, unless a
// file of that size is already there (same seed, same bytes).
func GenerateText(path string, mb int64) error {
	want := mb << 20
	if fi, err := os.Stat(path); err == nil && fi.Size() == want {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	writeText(w, want)
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// writeText writes exactly n bytes of lines of words, from a fixed seed.
func writeText(w *bufio.Writer, n int64) {
	r := rand.New(rand.NewPCG(2026, 77))
	zipf := rand.NewZipf(r, 1.1, 1, vocabulary-1)
	var line []byte
	for written := int64(0); written < n; {
		line = line[:0]
		for words := 6 + r.IntN(10); words > 0; words-- {
			line = append(line, word(zipf.Uint64())...)
			line = append(line, ' ')
		}
		line[len(line)-1] = '\n'
		if rem := n - written; int64(len(line)) > rem {
			line = line[:rem] // the last line may be cut short; still deterministic
		}
		w.Write(line)
		written += int64(len(line))
	}
}

// word spells index i in lowercase letters, so wordcount's [a-zA-Z]+ regexp
// sees exactly one word per token.
func word(i uint64) string {
	b := []byte{byte('a' + i%26)}
	for i /= 26; i > 0; i /= 26 {
		b = append(b, byte('a'+i%26))
	}
	return string(b)
}

// WordcountSignature summarises wordcount's output file ("word: count" lines)
// as distinct words, total words and a hash of the sorted lines: equal
// signatures mean identical counts, whatever order shards were written in.
func WordcountSignature(path string) (string, error) {
	lines, err := readOutputLines(path)
	if err != nil {
		return "", err
	}
	return linesSignature(lines), nil
}

func linesSignature(lines []string) string {
	sort.Strings(lines)
	h := sha256.New()
	var total int64
	for _, l := range lines {
		fmt.Fprintln(h, l)
		if i := strings.LastIndex(l, ": "); i >= 0 {
			n, _ := strconv.ParseInt(l[i+2:], 10, 64)
			total += n
		}
	}
	return fmt.Sprintf("words=%d total=%d sha=%x", len(lines), total, h.Sum(nil)[:6])
}

// InputWordcountSignature counts the words of the text at path itself, as
// Beam's Go wordcount defines them (the regexp [a-zA-Z]+('[a-z])?, within
// a line), reading it as a stream, and returns the signature that
// wordcount's output must have: an independent check of its counts.
func InputWordcountSignature(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	counts, err := countWords(bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	lines := make([]string, 0, len(counts))
	for w, n := range counts {
		lines = append(lines, fmt.Sprintf("%s: %d", w, n))
	}
	return linesSignature(lines), nil
}

// countWords counts the words of r by scanning bytes: a word is a longest
// run of ASCII letters, with an apostrophe and one lowercase letter after
// it if they follow (as the regexp's leftmost-first match takes them).
func countWords(r *bufio.Reader) (map[string]int64, error) {
	counts := map[string]int64{}
	var word []byte
	flush := func() {
		if len(word) > 0 {
			counts[string(word)]++
			word = word[:0]
		}
	}
	for {
		b, err := r.ReadByte()
		if err == io.EOF {
			flush()
			return counts, nil
		}
		if err != nil {
			return nil, err
		}
		switch {
		case isLetter(b):
			word = append(word, b)
		case b == '\'' && len(word) > 0:
			if next, err := r.Peek(1); err == nil && next[0] >= 'a' && next[0] <= 'z' {
				r.ReadByte()
				word = append(word, b, next[0])
			}
			flush()
		default:
			flush()
		}
	}
}

func isLetter(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' }

// readOutputLines reads path, or its shards (path-*) when the writer split it.
func readOutputLines(path string) ([]string, error) {
	files, _ := filepath.Glob(path + "-*")
	if _, err := os.Stat(path); err == nil {
		files = append(files, path)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no output at %s", path)
	}
	var lines []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for _, l := range strings.Split(string(b), "\n") {
			if l != "" {
				lines = append(lines, l)
			}
		}
	}
	return lines, nil
}
