package differential

import (
	"bufio"
	"io"
	"os"
)

// CountTokens counts maximal runs of bytes for which isWord holds in the
// file at path: an independent check that the oracle itself saw every word.
func CountTokens(path string, isWord func(byte) bool) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	var n int64
	in := false
	for {
		b, err := r.ReadByte()
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		w := isWord(b)
		if w && !in {
			n++
		}
		in = w
	}
}

// PythonWordByte is Python's `[\w']` for ASCII text, the token class of
// Beam's Python wordcount example (apache_beam/examples/wordcount.py).
func PythonWordByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_' || b == '\''
}
