package differential

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestReadLinesSortsAcrossShards(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "out-00000-of-00002"), []byte("b\na\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "out-00001-of-00002"), []byte("a\nc"), 0o644)
	os.WriteFile(filepath.Join(dir, "log"), []byte("not output\n"), 0o644)
	got, err := ReadLines(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "a", "b", "c"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	if _, err := ReadLines(filepath.Join(dir, "none")); err == nil {
		t.Error("no shards was accepted")
	}
}

func TestDiffLinesCountsDuplicates(t *testing.T) {
	want := []string{"a", "b", "c"}
	if d := DiffLines(want, want, 5); len(d) != 0 {
		t.Fatalf("equal lists differ: %q", d)
	}
	// A duplicated line is a difference even though the sets are equal.
	if d := DiffLines(want, []string{"a", "b", "b", "c"}, 5); !reflect.DeepEqual(d, []string{"+ b"}) {
		t.Fatalf("duplicate: %q", d)
	}
	if d := DiffLines(want, []string{"a", "d"}, 5); !reflect.DeepEqual(d, []string{"- b", "- c", "+ d"}) {
		t.Fatalf("got %q", d)
	}
	if d := DiffLines(want, nil, 1); !reflect.DeepEqual(d, []string{"- a", "..."}) {
		t.Fatalf("max not applied: %q", d)
	}
}

func TestCachedRunsOncePerKey(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "oracle")
	runs := 0
	write := func(d string) error {
		runs++
		return os.WriteFile(filepath.Join(d, "out"), []byte("x\n"), 0o644)
	}
	for i, key := range []string{"k1", "k1", "k2"} {
		if _, err := Cached(dir, key, write); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if runs != 2 {
		t.Fatalf("ran %d times, want 2 (once per key)", runs)
	}
	// A failed run must not be cached, and must not leave the old output.
	if _, err := Cached(dir, "k3", func(string) error { return errors.New("boom") }); err == nil {
		t.Fatal("error lost")
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
		t.Error("failed run left the previous key's output in place")
	}
	if ran, _ := Cached(dir, "k3", write); !ran {
		t.Error("a failed run was taken as complete")
	}
}

func TestKeyChangesWithInput(t *testing.T) {
	dir := t.TempDir()
	prog, in := filepath.Join(dir, "prog"), filepath.Join(dir, "in")
	os.WriteFile(prog, []byte("program"), 0o644)
	os.WriteFile(in, []byte("input"), 0o644)
	k1, err := Key(prog, []string{in}, "--a")
	if err != nil {
		t.Fatal(err)
	}
	if k2, _ := Key(prog, []string{in}, "--a"); k2 != k1 {
		t.Error("same program, input and args gave different keys")
	}
	if k3, _ := Key(prog, []string{in}, "--b"); k3 == k1 {
		t.Error("args do not change the key")
	}
	os.WriteFile(in, []byte("longer input"), 0o644)
	if k4, _ := Key(prog, []string{in}, "--a"); k4 == k1 {
		t.Error("a changed input does not change the key")
	}
	if _, err := Key(filepath.Join(dir, "missing"), nil); err == nil {
		t.Error("missing program accepted")
	}
}

func TestCountTokens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "text")
	os.WriteFile(path, []byte("Hello, world's end -- x_1\n\n42 a-b"), 0o644)
	n, err := CountTokens(path, PythonWordByte)
	if err != nil {
		t.Fatal(err)
	}
	// Hello | world's | end | x_1 | 42 | a | b
	if n != 7 {
		t.Fatalf("got %d tokens, want 7", n)
	}
}
