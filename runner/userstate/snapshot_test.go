package userstate

import (
	"bytes"
	"math/rand"
	"strings"
	"testing"
)

// TestSnapshotMetamorphic drives a store with random requests (as
// FuzzRequests does), snapshots it at a random point between commits,
// restores the snapshot and plays the rest on both stores: every read must
// agree, and so must their snapshots after every commit.
func TestSnapshotMetamorphic(t *testing.T) {
	lookup := varintLookup(t)
	r := rand.New(rand.NewSource(9))
	restores := 0
	for i := 0; i < 400; i++ {
		ops := make([]byte, 30+r.Intn(400))
		r.Read(ops)
		at := r.Intn(len(ops) / 2)
		a := NewStore()
		var b *Store
		txA, txB := a.Begin(lookup), (*Txn)(nil)
		for k := 0; len(ops) >= 3; k++ {
			op, sel := ops[0], ops[2]
			ops = ops[3:]
			key := fuzzKey(sel, &ops)
			switch op % 6 {
			case 0, 1:
				data := take(&ops, int(sel%16))
				writeBoth(t, txA, txB, appendReq(key, data))
			case 2:
				writeBoth(t, txA, txB, clearReq(key))
			case 3:
				ga, ea := txA.Get(key)
				if txB != nil {
					gb, eb := txB.Get(key)
					if show(ga) != show(gb) || (ea == nil) != (eb == nil) {
						t.Fatalf("run %d op %d: Get(%v) = %q, %v; restored %q, %v", i, k, key, show(ga), ea, show(gb), eb)
					}
				}
			case 4:
				a.Commit(txA)
				txA = a.Begin(lookup)
				if b != nil {
					b.Commit(txB)
					txB = b.Begin(lookup)
					if !bytes.Equal(a.Snapshot(), b.Snapshot()) {
						t.Fatalf("run %d op %d: snapshots differ after the same commits", i, k)
					}
				} else if k*3 >= at {
					snap := a.Snapshot()
					var err error
					if b, err = RestoreStore(snap); err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(b.Snapshot(), snap) {
						t.Fatalf("run %d: snapshot of the restored store differs", i)
					}
					txB = b.Begin(lookup) // txA was begun after the commit too
					restores++
				}
			case 5:
				a.DropWindow(tr, []byte{sel % 2}, []byte{sel % 3})
				if b != nil {
					b.DropWindow(tr, []byte{sel % 2}, []byte{sel % 3})
				}
			}
		}
	}
	if restores < 300 {
		t.Errorf("only %d restores", restores)
	}
}

func writeBoth(t *testing.T, a, b *Txn, r req) {
	ea := write(a, r)
	if b != nil {
		eb := write(b, r)
		if (ea == nil) != (eb == nil) {
			t.Fatalf("write %v: %v, restored: %v", r, ea, eb)
		}
	}
}

// A newer format, a foreign or damaged snapshot is refused with an error.
func TestSnapshotRefusals(t *testing.T) {
	lookup := varintLookup(t)
	s := NewStore()
	tx := s.Begin(lookup)
	mustWrite(t, tx, appendReq(bag("a", "k", "w"), []byte("x")))
	mustWrite(t, tx, appendReq(mm("m", "k", "w", "mk"), []byte("y")))
	mustWrite(t, tx, appendReq(list("l", "k", "w", nil), ol(3, 1, 1, 2)))
	s.Commit(tx)
	snap := s.Snapshot()
	newer := append([]byte(nil), snap...)
	newer[1+len(snapshotMagic)]++ // the version varint after the magic
	if _, err := RestoreStore(newer); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Errorf("newer version: err = %v", err)
	}
	if _, err := RestoreStore([]byte("BRENGINE")); err == nil {
		t.Error("foreign snapshot restored")
	}
	for n := 0; n < len(snap); n++ {
		if _, err := RestoreStore(snap[:n]); err == nil {
			t.Fatalf("snapshot truncated to %d of %d bytes restored", n, len(snap))
		}
	}
	got, err := RestoreStore(snap)
	if err != nil {
		t.Fatal(err)
	}
	rt := got.Begin(lookup)
	if v := show(mustGet(t, rt, list("l", "k", "w", rng(0, 10)))); v != show([][]byte{olEntry(1, 2), olEntry(3, 1)}) {
		t.Errorf("restored ordered list = %q", v)
	}
}
