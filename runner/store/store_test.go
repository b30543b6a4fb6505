package store

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

func open(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func scanAll(t *testing.T, s *Store, prefix string) string {
	t.Helper()
	var out []string
	err := s.Scan([]byte(prefix), func(k, v []byte) error {
		out = append(out, string(k)+"="+string(v))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(out, ",")
}

// TestWritesSurviveReopen writes batches, closes, reopens: what was
// committed is there, in key order, and prefixes do not leak into each
// other.
func TestWritesSurviveReopen(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	b := s.NewBatch()
	b.Set([]byte("jobs/a/1"), []byte("x"))
	b.Set([]byte("jobs/a/0"), []byte("y"))
	b.Set([]byte("jobs/b/0"), []byte("z"))
	b.Set([]byte("jobsx"), []byte("other"))
	if err := b.Commit(false); err != nil {
		t.Fatal(err)
	}
	b = s.NewBatch()
	b.DeletePrefix([]byte("jobs/b/"))
	if err := b.Commit(true); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir)
	defer s.Close()
	if got, want := scanAll(t, s, "jobs/"), "jobs/a/0=y,jobs/a/1=x"; got != want {
		t.Fatalf("Scan(jobs/) = %q, want %q", got, want)
	}
	if v, ok, err := s.Get([]byte("jobsx")); err != nil || !ok || string(v) != "other" {
		t.Fatalf("Get(jobsx) = %q, %v, %v", v, ok, err)
	}
	if _, ok, err := s.Get([]byte("jobs/b/0")); err != nil || ok {
		t.Fatalf("deleted key present: %v, %v", ok, err)
	}
}

// TestSecondOpenRefused: Pebble locks the directory, so a second server
// on the same state dir gets a message that says what to do.
func TestSecondOpenRefused(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	_, err := Open(dir, nil)
	if err == nil || !strings.Contains(err.Error(), "in use by another beam-runner server") || !strings.Contains(err.Error(), "--state_dir") {
		t.Fatalf("second Open: err = %v, want a clear in-use message", err)
	}
	s.Close()
	open(t, dir).Close() // released on Close
}

// TestNewerFormatRefused stamps a store with a future format version, as
// a newer build would, and requires a refusal naming both versions.
func TestNewerFormatRefused(t *testing.T) {
	dir := t.TempDir()
	open(t, dir).Close()
	db, err := pebble.Open(dir, &pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Set(formatKey, []byte(strconv.Itoa(FormatVersion+1)), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = Open(dir, nil)
	want := fmt.Sprintf("format %d, newer than this beam-runner's format %d", FormatVersion+1, FormatVersion)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Open = %v, want an error containing %q", err, want)
	}
	open(t, t.TempDir()).Close()
}

func TestPrefixEnd(t *testing.T) {
	for in, want := range map[string]string{"a": "b", "a\xff": "b", "\xff\xff": "", "jobs/": "jobs0"} {
		if got := string(prefixEnd([]byte(in))); got != want {
			t.Errorf("prefixEnd(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestUseAfterClose: a job may report after the server closed the store;
// it gets ErrClosed, never Pebble's panic.
func TestUseAfterClose(t *testing.T) {
	s := open(t, t.TempDir())
	b := s.NewBatch()
	b.Set([]byte("k"), []byte("v"))
	s.Close()
	if err := b.Commit(true); err != ErrClosed {
		t.Fatalf("Commit after Close = %v", err)
	}
	if _, _, err := s.Get([]byte("k")); err != ErrClosed {
		t.Fatalf("Get after Close = %v", err)
	}
	if err := s.Scan(nil, func(k, v []byte) error { return nil }); err != ErrClosed {
		t.Fatalf("Scan after Close = %v", err)
	}
	if err := s.Close(); err != ErrClosed {
		t.Fatalf("second Close = %v", err)
	}
}
