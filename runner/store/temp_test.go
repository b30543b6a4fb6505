package store

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/beam-runner/beam-runner/testsupport/testkit"
)

// A temporary store works as any store, spills included, and its Close
// leaves the temp dir as it found it.
func TestOpenTempLeavesNothingBehind(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	s, err := OpenTemp(nil)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(s.Dir()) != tmp {
		t.Fatalf("store in %s, want it in $TMPDIR %s", s.Dir(), tmp)
	}
	if fi, err := os.Stat(s.Dir()); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("store dir: %v, %v; want a private (0700) directory", fi, err)
	}
	b := s.NewBatch()
	b.Set([]byte("jobs/1"), []byte("x"))
	if err := b.Commit(true); err != nil {
		t.Fatal(err)
	}
	sp := s.Scratch("job-1").Space("gbk")
	if err := sp.WriteRun([][]byte{[]byte("k")}, [][]byte{[]byte("v")}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Fatalf("$TMPDIR holds %v after Close; want nothing", left)
	}
}

// Only the temporary stores of servers that are gone are reclaimed: never
// one whose process runs (the moment between making the directory and
// locking it included), nor one whose lock a live process holds, nor
// anything that is not a temporary store.
func TestReclaimTempSparesLiveServers(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dead := testkit.DeadPid(t)
	mk := func(name string) string {
		dir := filepath.Join(tmp, name)
		if err := os.MkdirAll(filepath.Join(dir, "scratch"), 0o700); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	crashed := mk(tempPattern + strconv.Itoa(dead) + "-1")
	unlocked := mk(tempPattern + strconv.Itoa(os.Getpid()) + "-2") // live pid, not locked yet
	lockedDir := tempPattern + strconv.Itoa(dead) + "-3"           // say, another pid namespace's
	locked, err := Open(filepath.Join(tmp, lockedDir), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer locked.Close()
	other := mk("beam-runner-state-notes")
	live, err := OpenTemp(nil) // reclaims crashed already
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()

	if _, err := os.Stat(crashed); !os.IsNotExist(err) {
		t.Errorf("OpenTemp left the crashed server's store %s", crashed)
	}
	mk(filepath.Base(crashed))
	if got := ReclaimTemp(tmp, nil); !slices.Equal(got, []string{crashed}) {
		t.Errorf("ReclaimTemp removed %v, want only %s", got, crashed)
	}
	for _, dir := range []string{unlocked, locked.Dir(), other, live.Dir()} {
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("%s was removed: %v", dir, err)
		}
	}
}
