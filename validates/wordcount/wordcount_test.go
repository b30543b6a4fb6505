package wordcount

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestGenerateIsDeterministic(t *testing.T) {
	var a, b, c bytes.Buffer
	if err := Generate(&a, 100_000, 7); err != nil {
		t.Fatal(err)
	}
	Generate(&b, 100_000, 7)
	Generate(&c, 100_000, 8)
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("same size and seed gave different text")
	}
	if bytes.Equal(a.Bytes(), c.Bytes()) {
		t.Error("different seeds gave the same text")
	}
	if n := a.Len(); n < 100_000 || n > 100_000+1024 {
		t.Errorf("size %d, want just over 100000", n)
	}
	if lines := bytes.Count(a.Bytes(), []byte("\n")); lines < 500 {
		t.Errorf("only %d lines", lines)
	}
}

func TestEnsureFileCaches(t *testing.T) {
	dir := t.TempDir()
	p1, gen1, err := EnsureFile(dir, 10_000, 1)
	if err != nil || !gen1 {
		t.Fatalf("first: generated=%v err=%v", gen1, err)
	}
	p2, gen2, err := EnsureFile(dir, 10_000, 1)
	if err != nil || gen2 || p1 != p2 {
		t.Fatalf("second: path %s vs %s, generated=%v err=%v", p2, p1, gen2, err)
	}
	if tmps, _ := filepath.Glob(filepath.Join(dir, "*.tmp")); len(tmps) != 0 {
		t.Errorf("left temporary files %v", tmps)
	}
}

func TestReadOutputAndDiff(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "out-00000-of-00002"), []byte("a: 3\nb: 1\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "out-00001-of-00002"), []byte("c: 2\n"), 0o644)
	got, err := ReadOutput(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	want := Counts{"a": 3, "b": 1, "c": 2}
	if d := Diff(want, got, 5); len(d) != 0 || got.Total() != 6 {
		t.Fatalf("diff %v, total %d", d, got.Total())
	}
	d := Diff(want, Counts{"a": 4, "b": 1, "z": 1}, 5)
	if len(d) != 3 {
		t.Fatalf("want 3 differences, got %v", d)
	}
	if d := Diff(want, Counts{}, 1); len(d) != 2 || d[1] != "..." {
		t.Fatalf("max not applied: %v", d)
	}
}

func TestReadOutputRejectsBadLinesAndDuplicates(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "out-0"), []byte("a: 3\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "out-1"), []byte("a: 1\n"), 0o644)
	if _, err := ReadOutput(filepath.Join(dir, "out")); err == nil {
		t.Error("a word in two shards was accepted")
	}
	os.WriteFile(filepath.Join(dir, "bad"), []byte("a 3\n"), 0o644)
	if _, err := ReadOutput(filepath.Join(dir, "bad")); err == nil {
		t.Error("a malformed line was accepted")
	}
	if _, err := ReadOutput(filepath.Join(dir, "none")); err == nil {
		t.Error("no shards was accepted")
	}
}
