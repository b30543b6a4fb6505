package userstate

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	"github.com/beam-runner/beam-runner/stateplane"
)

// The state plane uses a Txn through these interfaces.
var (
	_ stateplane.Handler = (*Txn)(nil)
	_ stateplane.Writer  = (*Txn)(nil)
)

// TestPagingLargeBag reads a 100k-element bag the way the state plane does:
// Get per request, then Page at the token. Pages must split at element
// boundaries and concatenate to the whole bag, both for committed pieces and
// for a bundle's own appends on top.
func TestPagingLargeBag(t *testing.T) {
	const n = 100_000
	s := NewStore()
	k := bag("s", "k", "w")
	var want []byte
	tx := s.Begin(nil)
	for i := 0; i < n; i++ {
		e := []byte(fmt.Sprintf("%0100d", i)) // 100-byte elements: ~10MB
		want = append(want, e...)
		mustWrite(t, tx, appendReq(k, e))
		if i == n/2 {
			s.Commit(tx)
			tx = s.Begin(nil) // half committed, half pending
		}
	}
	var got []byte
	var token []byte
	pages := 0
	for {
		page, next, err := stateplane.Page(mustGet(t, tx, k), token)
		if err != nil {
			t.Fatal(err)
		}
		if len(page)%100 != 0 {
			t.Fatalf("page %d of %d bytes splits an element", pages, len(page))
		}
		got, token, pages = append(got, page...), next, pages+1
		if len(token) == 0 {
			break
		}
	}
	if pages < 2 {
		t.Fatalf("got %d pages, want several", pages)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("pages concatenate to %d bytes, want %d equal bytes", len(got), len(want))
	}
}

// TestConcurrentReadWhileCommit runs bundles reading and writing their own
// keys on state-plane goroutines while the driver commits other bundles; run
// with -race it checks the locking and the no-in-place-mutation rule.
func TestConcurrentReadWhileCommit(t *testing.T) {
	s := NewStore()
	lookup := varintLookup(t)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		key := fmt.Sprint("k", g)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := 0; round < 200; round++ {
				tx := s.Begin(lookup)
				if got := len(mustGet(t, tx, bag("s", key, "w"))); got != round {
					t.Errorf("%s round %d: bag has %d pieces", key, round, got)
					return
				}
				mustWrite(t, tx, appendReq(bag("s", key, "w"), []byte("x")))
				mustWrite(t, tx, appendReq(mm("m", key, "w", "a"), []byte("y")))
				mustWrite(t, tx, appendReq(list("l", key, "w", nil), ol(int64(-round), 1)))
				mustGet(t, tx, list("l", key, "w", rng(-1000, 1000)))
				mustGet(t, tx, mmKeys("m", key, "w"))
				s.Commit(tx)
			}
		}()
	}
	wg.Wait()
	if st := s.Stats(); st.Scopes != 4 || st.Pieces != 4*3*200 {
		t.Fatalf("Stats = %+v", st)
	}
}
