package userstate

import (
	"bytes"
	"math/rand"
	"strings"
	"testing"
)

// randomOps applies n random bundles to s: appends and clears of every
// kind over a small key space, committed or dropped, and window drops.
func randomOps(t testing.TB, s *Store, r *rand.Rand, n int) {
	lookup := varintLookup(t)
	for ; n > 0; n-- {
		tx := s.Begin(lookup)
		for ops := r.Intn(6); ops > 0; ops-- {
			id, key, win := string(rune('a'+r.Intn(2))), string([]byte{byte(r.Intn(3))}), string([]byte{byte(r.Intn(2))})
			var k Key
			switch r.Intn(4) {
			case 0:
				k = bag(id, key, win)
			case 1:
				k = mm(id, key, win, string([]byte{byte(r.Intn(3))}))
			case 2:
				k = mmKeys(id, key, win)
			default:
				k = list(id, key, win, rng(int64(r.Intn(20)-10), int64(r.Intn(20)-5)))
			}
			var err error
			switch {
			case r.Intn(4) == 0:
				err = tx.Clear(k)
			case k.Kind == OrderedList:
				err = tx.Append(k, ol(int64(r.Intn(20)-10), int64(r.Intn(100))))
			default:
				err = tx.Append(k, []byte{byte(r.Intn(256)), 0})
			}
			if err != nil && k.Kind != MultimapKeys {
				t.Fatalf("%+v: %v", k, err)
			}
		}
		switch r.Intn(5) {
		case 0: // a failed bundle: dropped
		case 1:
			s.DropWindow(tr, []byte{byte(r.Intn(3))}, []byte{byte(r.Intn(2))})
		default:
			s.Commit(tx)
		}
	}
}

// TestSnapshotRoundTrip: a restored store snapshots to the same bytes, and
// behaves like the original: the same further bundles on both leave equal
// state.
func TestSnapshotRoundTrip(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	nonEmpty := 0
	for i := 0; i < 200; i++ {
		s := NewStore()
		randomOps(t, s, r, r.Intn(30))
		snap := s.Snapshot()
		back, err := Restore(snap)
		if err != nil {
			t.Fatalf("script %d: Restore: %v", i, err)
		}
		if got := back.Snapshot(); !bytes.Equal(got, snap) {
			t.Fatalf("script %d: restored store snapshots differently", i)
		}
		if back.Stats() != s.Stats() {
			t.Fatalf("script %d: stats %+v, original %+v", i, back.Stats(), s.Stats())
		}
		if len(s.Scopes()) > 0 {
			nonEmpty++
		}
		seed := r.Int63()
		randomOps(t, s, rand.New(rand.NewSource(seed)), 20)
		randomOps(t, back, rand.New(rand.NewSource(seed)), 20)
		if !bytes.Equal(s.Snapshot(), back.Snapshot()) {
			t.Fatalf("script %d: the restored store diverged from the original under the same bundles", i)
		}
	}
	if nonEmpty < 100 {
		t.Fatalf("only %d of 200 scripts left state: the test exercises too little", nonEmpty)
	}
}

func TestSnapshotRefusals(t *testing.T) {
	s := NewStore()
	randomOps(t, s, rand.New(rand.NewSource(6)), 30)
	snap := s.Snapshot()
	newer := append([]byte(snapshotMagic), SnapshotVersion+1)
	newer = append(newer, snap[len(snapshotMagic)+1:]...)
	for name, tc := range map[string]struct {
		in   []byte
		want string
	}{
		"newer version":  {newer, "snapshot version 2"},
		"not a snapshot": {[]byte("hello"), "not a user state snapshot"},
		"truncated":      {snap[:len(snap)-1], "bad snapshot"},
		"trailing":       {append(bytes.Clone(snap), 0), "trailing bytes"},
		"huge count":     {append([]byte(snapshotMagic), 1, 0xff, 0xff, 0xff, 0xff, 0x0f), "count larger"},
	} {
		if _, err := Restore(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Restore err = %v, want %q", name, err, tc.want)
		}
	}
	if empty, err := Restore(NewStore().Snapshot()); err != nil || len(empty.Scopes()) != 0 {
		t.Errorf("empty snapshot: %v, %v", empty, err)
	}
}

// FuzzRestore: Restore never panics, and accepts only canonical snapshots
// (what it accepts snapshots back to the same bytes).
func FuzzRestore(f *testing.F) {
	r := rand.New(rand.NewSource(7))
	for i := 0; i < 8; i++ {
		s := NewStore()
		randomOps(f, s, r, 10)
		f.Add(s.Snapshot())
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Restore(b)
		if err != nil {
			return
		}
		if got := s.Snapshot(); !bytes.Equal(got, b) {
			t.Fatalf("accepted a non-canonical snapshot %x (re-snapshots to %x)", b, got)
		}
	})
}
