package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestWriteTextIsDeterministicAndExact(t *testing.T) {
	gen := func() []byte {
		var b bytes.Buffer
		w := bufio.NewWriter(&b)
		writeText(w, 10_000)
		w.Flush()
		return b.Bytes()
	}
	a, b := gen(), gen()
	if len(a) != 10_000 || !bytes.Equal(a, b) {
		t.Fatalf("len %d, equal %v", len(a), bytes.Equal(a, b))
	}
	if strings.Trim(string(a), "abcdefghijklmnopqrstuvwxyz \n") != "" {
		t.Error("text has characters other than lowercase words")
	}
}

func TestWord(t *testing.T) {
	if word(0) != "a" || word(25) != "z" || word(26) != "ab" {
		t.Errorf("word: %q %q %q", word(0), word(25), word(26))
	}
}

func TestWordcountSignatureIgnoresOrderAndShards(t *testing.T) {
	dir := t.TempDir()
	one := filepath.Join(dir, "one.txt")
	os.WriteFile(one, []byte("b: 2\na: 1\n"), 0o644)
	sharded := filepath.Join(dir, "two.txt")
	os.WriteFile(sharded+"-00000-of-00002", []byte("a: 1\n"), 0o644)
	os.WriteFile(sharded+"-00001-of-00002", []byte("b: 2\n"), 0o644)
	s1, err1 := WordcountSignature(one)
	s2, err2 := WordcountSignature(sharded)
	if err1 != nil || err2 != nil || s1 != s2 || !strings.HasPrefix(s1, "words=2 total=3 ") {
		t.Errorf("signatures %q (%v), %q (%v)", s1, err1, s2, err2)
	}
	if _, err := WordcountSignature(filepath.Join(dir, "none")); err == nil {
		t.Error("want error for missing output")
	}
}

// TestInputCountMatchesWordcount: the bench's own count of a text gives
// the signature of the output Beam's wordcount writes for it, whose words
// are its regexp's matches; generated text and text with apostrophes,
// capitals and punctuation alike.
func TestInputCountMatchesWordcount(t *testing.T) {
	var gen bytes.Buffer
	w := bufio.NewWriter(&gen)
	writeText(w, 200_000)
	w.Flush()
	for name, text := range map[string]string{
		"generated": gen.String(),
		"mixed":     "Don't stop: it's 'quoted' o'Neil x'y z''a\nend's\n'\nA-b c_d  e\te'\n",
	} {
		dir := t.TempDir()
		in := filepath.Join(dir, "in.txt")
		if err := os.WriteFile(in, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		counts := map[string]int{}
		for _, line := range strings.Split(text, "\n") {
			for _, word := range wordRE.FindAllString(line, -1) {
				counts[word]++
			}
		}
		var out strings.Builder
		for word, n := range counts {
			fmt.Fprintf(&out, "%s: %v\n", word, n) // as wordcount's formatFn writes it
		}
		outPath := filepath.Join(dir, "out.txt")
		if err := os.WriteFile(outPath, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		want, err := WordcountSignature(outPath)
		if err != nil {
			t.Fatal(err)
		}
		got, err := InputWordcountSignature(in)
		if err != nil || got != want {
			t.Errorf("%s: input count %q (%v), wordcount's output %q", name, got, err, want)
		}
	}
	if _, err := InputWordcountSignature(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Error("want an error for a missing input")
	}
}

// wordRE is Beam's Go wordcount's definition of a word.
var wordRE = regexp.MustCompile(`[a-zA-Z]+('[a-z])?`)
