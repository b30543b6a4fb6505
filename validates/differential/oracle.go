package differential

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// doneFile marks a complete oracle output and holds the key it was made for.
const doneFile = "DONE"

// Key identifies an oracle run: the program's bytes (none if program is
// ""), the input files' names, sizes and modification times, and the
// arguments. Any change reruns the oracle.
func Key(program string, inputs []string, args ...string) (string, error) {
	h := sha256.New()
	if program != "" {
		f, err := os.Open(program)
		if err != nil {
			return "", err
		}
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return "", err
		}
	}
	for _, in := range inputs {
		fi, err := os.Stat(in)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "\x00%s %d %d", in, fi.Size(), fi.ModTime().UnixNano())
	}
	for _, a := range args {
		fmt.Fprintf(h, "\x00%s", a)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Cached makes sure dir holds the output of run for key: if dir was
// completed for the same key, it does nothing and returns false; otherwise
// it empties dir, calls run(dir) and, only if run succeeds, marks dir done.
// An interrupted or failed run is never taken for a complete one.
func Cached(dir, key string, run func(dir string) error) (ran bool, err error) {
	if b, err := os.ReadFile(filepath.Join(dir, doneFile)); err == nil && string(b) == key {
		return false, nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return false, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, err
	}
	if err := run(dir); err != nil {
		return true, err
	}
	return true, os.WriteFile(filepath.Join(dir, doneFile), []byte(key), 0o644)
}
