package bench

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
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
