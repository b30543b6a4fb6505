package store

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// Only old default stores that no server holds and nothing touched for
// the retention go: not a fresh one, not one in use, not a directory that
// is not a port's store.
func TestPruneDefaultDirs(t *testing.T) {
	parent := t.TempDir()
	now := time.Now()
	old := now.Add(-8 * 24 * time.Hour)
	mk := func(name string, mtime time.Time) string {
		dir := filepath.Join(parent, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(dir, "000001.log")
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{f, dir} {
			if err := os.Chtimes(p, mtime, mtime); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	stale := mk("port-2", old)
	fresh := mk("port-3", now)
	inUse := filepath.Join(parent, "port-4")
	st, err := Open(inUse, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, p := range []string{inUse, filepath.Join(inUse, "LOCK")} {
		os.Chtimes(p, old, old)
	}
	other := mk("notes", old)

	got := PruneDefaultDirs(parent, DefaultRetention, now, nil)
	if !slices.Equal(got, []string{stale}) {
		t.Fatalf("removed %v, want only %s", got, stale)
	}
	for _, dir := range []string{fresh, inUse, other} {
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("%s was removed: %v", dir, err)
		}
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("%s still exists", stale)
	}
}
