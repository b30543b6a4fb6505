// Package wordcount makes the input for the wordcount equivalence check and
// compares the word counts two runners wrote.
package wordcount

import (
	"bufio"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
)

// vocabSize is how many distinct words the generator draws from. Case
// variants and possessives ("Word's") add more distinct tokens to the output.
const vocabSize = 4000

// Generate writes size bytes (to within one line) of word-like text,
// determined only by size and seed: Zipf-distributed words from a fixed
// vocabulary, with capitals, punctuation, numbers and line breaks.
func Generate(w io.Writer, size, seed int64) error {
	rng := rand.New(rand.NewSource(seed))
	vocab := vocabulary(rng, vocabSize)
	zipf := rand.NewZipf(rng, 1.1, 2, uint64(len(vocab)-1))
	bw := bufio.NewWriterSize(w, 1<<20)
	line := make([]byte, 0, 256)
	for n := int64(0); n < size; {
		line = appendLine(line[:0], rng, zipf, vocab)
		if _, err := bw.Write(line); err != nil {
			return err
		}
		n += int64(len(line))
	}
	return bw.Flush()
}

// vocabulary makes n distinct lowercase pseudo-words from syllables.
func vocabulary(rng *rand.Rand, n int) []string {
	onsets := []string{"b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "qu", "r", "s", "t", "v", "w", "z", "br", "ch", "st", "th", "tr", "sh", "pl"}
	nuclei := []string{"a", "e", "i", "o", "u", "ai", "ea", "ou", "y"}
	codas := []string{"", "", "n", "r", "s", "t", "ck", "ng", "ll", "rd"}
	seen := map[string]bool{}
	words := make([]string, 0, n)
	for len(words) < n {
		var w string
		for i, k := 0, 1+rng.Intn(4); i < k; i++ {
			w += onsets[rng.Intn(len(onsets))] + nuclei[rng.Intn(len(nuclei))] + codas[rng.Intn(len(codas))]
		}
		if !seen[w] {
			seen[w] = true
			words = append(words, w)
		}
	}
	return words
}

var punct = []string{",", ",", ".", ".", ";", ":", "!", "?", " -", "\"", "'"}

// appendLine appends one line of 0 to 24 tokens to b. Empty lines happen.
func appendLine(b []byte, rng *rand.Rand, zipf *rand.Zipf, vocab []string) []byte {
	for i, k := 0, rng.Intn(25); i < k; i++ {
		if i > 0 {
			b = append(b, ' ')
		}
		b = appendToken(b, rng, vocab[zipf.Uint64()])
	}
	return append(b, '\n')
}

func appendToken(b []byte, rng *rand.Rand, word string) []byte {
	start := len(b)
	switch r := rng.Intn(100); {
	case r < 2:
		return fmt.Appendf(b, "%d", rng.Intn(10000))
	case r < 4:
		b = append(b, word...)
		b = append(b, "'s"...)
	default:
		b = append(b, word...)
	}
	if rng.Intn(10) == 0 {
		b[start] -= 'a' - 'A'
	}
	if rng.Intn(8) == 0 {
		b = append(b, punct[rng.Intn(len(punct))]...)
	}
	return b
}

// EnsureFile returns the path of the generated text for size and seed in
// dir, generating it only if it is not there yet. It is written under a
// temporary name and renamed, so an interrupted run never leaves a short
// file that a later run would take for complete.
func EnsureFile(dir string, size, seed int64) (path string, generated bool, err error) {
	path = filepath.Join(dir, fmt.Sprintf("words-%d-%d.txt", size, seed))
	if fi, err := os.Stat(path); err == nil && fi.Size() >= size {
		return path, false, nil
	}
	tmp, err := os.CreateTemp(dir, "words-*.tmp")
	if err != nil {
		return "", false, err
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	if err := Generate(tmp, size, seed); err != nil {
		tmp.Close()
		return "", false, err
	}
	if err := tmp.Close(); err != nil {
		return "", false, err
	}
	return path, true, os.Rename(tmp.Name(), path)
}
