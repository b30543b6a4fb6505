package userstate

import (
	"bytes"
	"strings"
	"testing"
)

// step is one action of a script: on transaction tx (begun on first use),
// append data, clear, get (expecting want), or commit tx.
type step struct {
	tx   int
	op   string // "append", "clear", "get", "commit", "drop"
	key  Key
	data string
	want string // for get: pieces joined by "|"
}

func runScript(t *testing.T, steps []step) *Store {
	t.Helper()
	s := NewStore()
	txns := map[int]*Txn{}
	for i, st := range steps {
		tx := txns[st.tx]
		if tx == nil {
			tx = s.Begin(varintLookup(t))
			txns[st.tx] = tx
		}
		switch st.op {
		case "append":
			mustWrite(t, tx, appendReq(st.key, []byte(st.data)))
		case "clear":
			mustWrite(t, tx, clearReq(st.key))
		case "get":
			if got := show(mustGet(t, tx, st.key)); got != st.want {
				t.Fatalf("step %d: get %v = %q, want %q", i, st.key, got, st.want)
			}
		case "commit":
			s.Commit(tx)
			delete(txns, st.tx) // the next use of this number begins afresh
		case "drop":
			s.DropWindow(st.key.Transform, st.key.Key, st.key.Window)
		default:
			t.Fatalf("step %d: unknown op %q", i, st.op)
		}
	}
	return s
}

func TestScripts(t *testing.T) {
	a := bag("s", "k", "w")
	tests := []struct {
		name  string
		steps []step
	}{
		{"bag read your writes then commit", []step{
			{op: "get", key: a, want: ""},
			{op: "append", key: a, data: "x"},
			{op: "append", key: a, data: "yz"},
			{op: "get", key: a, want: "x|yz"},
			{op: "commit"},
			{op: "get", key: a, want: "x|yz"},
			{op: "append", key: a, data: "w"},
			{op: "get", key: a, want: "x|yz|w"},
		}},
		{"bag blind write", []step{
			{op: "append", key: a, data: "v"},
			{op: "commit"},
			{op: "get", key: a, want: "v"},
		}},
		{"bag clear then append in one txn (value state)", []step{
			{op: "append", key: a, data: "old"},
			{op: "commit"},
			{op: "clear", key: a},
			{op: "get", key: a, want: ""},
			{op: "append", key: a, data: "new"},
			{op: "get", key: a, want: "new"},
			{tx: 1, op: "get", key: a, want: "old"},
			{op: "commit"},
			{tx: 1, op: "get", key: a, want: "new"},
		}},
		{"bag clear alone empties", []step{
			{op: "append", key: a, data: "old"},
			{op: "commit"},
			{op: "clear", key: a},
			{op: "commit"},
			{op: "get", key: a, want: ""},
		}},
		{"state ids keys windows kinds are distinct", []step{
			{op: "append", key: a, data: "a"},
			{op: "append", key: bag("s2", "k", "w"), data: "b"},
			{op: "append", key: bag("s", "k2", "w"), data: "c"},
			{op: "append", key: bag("s", "k", "w2"), data: "d"},
			{op: "append", key: mm("s", "k", "w", "m"), data: "e"},
			{op: "commit"},
			{op: "get", key: a, want: "a"},
			{op: "get", key: bag("s2", "k", "w"), want: "b"},
			{op: "get", key: bag("s", "k2", "w"), want: "c"},
			{op: "get", key: bag("s", "k", "w2"), want: "d"},
			{op: "get", key: mm("s", "k", "w", "m"), want: "e"},
		}},
		{"multimap values, keys, per-key clear then append", []step{
			{op: "append", key: mm("m", "k", "w", "b"), data: "1"},
			{op: "append", key: mm("m", "k", "w", "a"), data: "2"},
			{op: "append", key: mm("m", "k", "w", "b"), data: "3"},
			{op: "get", key: mm("m", "k", "w", "b"), want: "1|3"},
			{op: "get", key: mmKeys("m", "k", "w"), want: "a|b"},
			{op: "commit"},
			{op: "clear", key: mm("m", "k", "w", "a")},
			{op: "get", key: mmKeys("m", "k", "w"), want: "b"},
			{op: "get", key: mm("m", "k", "w", "a"), want: ""},
			{op: "append", key: mm("m", "k", "w", "a"), data: "4"},
			{op: "append", key: mm("m", "k", "w", "b"), data: "5"},
			{op: "get", key: mmKeys("m", "k", "w"), want: "a|b"},
			{op: "get", key: mm("m", "k", "w", "a"), want: "4"},
			{op: "get", key: mm("m", "k", "w", "b"), want: "1|3|5"},
			{op: "commit"},
			{op: "get", key: mm("m", "k", "w", "a"), want: "4"},
			{op: "get", key: mm("m", "k", "w", "b"), want: "1|3|5"},
		}},
		{"multimap keys clear clears the whole map", []step{
			{op: "append", key: mm("m", "k", "w", "a"), data: "1"},
			{op: "append", key: mm("m", "k", "w", "b"), data: "2"},
			{op: "commit"},
			{op: "append", key: mm("m", "k", "w", "a"), data: "3"},
			{op: "clear", key: mmKeys("m", "k", "w")},
			{op: "get", key: mmKeys("m", "k", "w"), want: ""},
			{op: "get", key: mm("m", "k", "w", "a"), want: ""},
			{op: "append", key: mm("m", "k", "w", "c"), data: "4"},
			{op: "get", key: mmKeys("m", "k", "w"), want: "c"},
			{op: "get", key: mm("m", "k", "w", "b"), want: ""},
			{op: "commit"},
			{op: "get", key: mmKeys("m", "k", "w"), want: "c"},
			{op: "get", key: mm("m", "k", "w", "a"), want: ""},
		}},
		{"multimap key cleared to empty vanishes after commit", []step{
			{op: "append", key: mm("m", "k", "w", "a"), data: "1"},
			{op: "commit"},
			{op: "clear", key: mm("m", "k", "w", "a")},
			{op: "commit"},
			{op: "get", key: mmKeys("m", "k", "w"), want: ""},
		}},
		{"isolation: uncommitted writes are invisible, failed txn leaves no trace", []step{
			{op: "append", key: a, data: "committed"},
			{op: "commit"},
			{tx: 1, op: "get", key: a, want: "committed"},
			{tx: 2, op: "append", key: a, data: "lost"},
			{tx: 2, op: "clear", key: mmKeys("m", "k", "w")},
			{tx: 2, op: "append", key: list("l", "k", "w", nil), data: string(ol(1, 1))},
			{tx: 1, op: "get", key: a, want: "committed"},
			{tx: 1, op: "append", key: bag("s", "k2", "w"), data: "other"},
			{tx: 1, op: "commit"},
			// tx 2 never commits: its bundle failed.
			{tx: 3, op: "get", key: a, want: "committed"},
			{tx: 3, op: "get", key: list("l", "k", "w", rng(-9, 9)), want: ""},
			{tx: 3, op: "get", key: bag("s", "k2", "w"), want: "other"},
		}},
		{"drop window", []step{
			{op: "append", key: a, data: "1"},
			{op: "append", key: bag("s", "k", "w2"), data: "2"},
			{op: "append", key: mm("m", "k", "w", "x"), data: "3"},
			{op: "append", key: list("l", "k", "w", nil), data: string(ol(1, 1))},
			{op: "commit"},
			{op: "drop", key: a},
			{op: "get", key: a, want: ""},
			{op: "get", key: mmKeys("m", "k", "w"), want: ""},
			{op: "get", key: list("l", "k", "w", rng(-9, 9)), want: ""},
			{op: "get", key: bag("s", "k", "w2"), want: "2"},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { runScript(t, tc.steps) })
	}
}

func TestOrderedList(t *testing.T) {
	k := func(r *Range) Key { return list("l", "k", "w", r) }
	e := func(kvs ...int64) string { // expected pieces, one per entry
		var s []string
		for i := 0; i+1 < len(kvs); i += 2 {
			s = append(s, string(olEntry(kvs[i], kvs[i+1])))
		}
		return strings.Join(s, "|")
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"sorted, stable for duplicate keys, ranges half-open", []step{
			{op: "append", key: k(nil), data: string(ol(5, 1, 3, 2, 5, 3))},
			{op: "append", key: k(nil), data: string(ol(3, 4))},
			{op: "append", key: k(nil), data: string(ol(-7, 5))},
			{op: "get", key: k(rng(-100, 100)), want: e(-7, 5, 3, 2, 3, 4, 5, 1, 5, 3)},
			{op: "get", key: k(rng(3, 5)), want: e(3, 2, 3, 4)},
			{op: "get", key: k(rng(5, 3)), want: ""},
			{op: "commit"},
			{op: "append", key: k(nil), data: string(ol(3, 6, 4, 7))},
			{op: "get", key: k(rng(3, 6)), want: e(3, 2, 3, 4, 3, 6, 4, 7, 5, 1, 5, 3)},
			{op: "commit"},
			{op: "get", key: k(rng(3, 6)), want: e(3, 2, 3, 4, 3, 6, 4, 7, 5, 1, 5, 3)},
		}},
		{"clear range hides committed and pending, then append", []step{
			{op: "append", key: k(nil), data: string(ol(1, 1, 2, 2, 3, 3, 4, 4))},
			{op: "commit"},
			{op: "append", key: k(nil), data: string(ol(2, 5, 5, 6))},
			{op: "clear", key: k(rng(2, 4))},
			{op: "get", key: k(rng(0, 10)), want: e(1, 1, 4, 4, 5, 6)},
			{op: "append", key: k(nil), data: string(ol(3, 7, 2, 8))},
			{op: "get", key: k(rng(0, 10)), want: e(1, 1, 2, 8, 3, 7, 4, 4, 5, 6)},
			{op: "clear", key: k(rng(4, 5))},
			{op: "clear", key: k(rng(9, 20))},
			{op: "get", key: k(rng(0, 10)), want: e(1, 1, 2, 8, 3, 7, 5, 6)},
			{tx: 1, op: "get", key: k(rng(0, 10)), want: e(1, 1, 2, 2, 3, 3, 4, 4)},
			{op: "commit"},
			{tx: 1, op: "get", key: k(rng(0, 10)), want: e(1, 1, 2, 8, 3, 7, 5, 6)},
		}},
		{"full clear the way the SDKs send it", []step{
			{op: "append", key: k(nil), data: string(ol(-1<<63, 1, 0, 2, 1<<62, 3))},
			{op: "commit"},
			{op: "clear", key: k(rng(-1<<63, 1<<63-1))},
			{op: "get", key: k(rng(-1<<63, 1<<63-1)), want: ""},
			{op: "commit"},
			{op: "get", key: k(rng(-1<<63, 1<<63-1)), want: ""},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { runScript(t, tc.steps) })
	}
}

func TestErrors(t *testing.T) {
	s := NewStore()
	tx := s.Begin(varintLookup(t))
	tests := []struct {
		name    string
		do      func() error
		wantErr string
	}{
		{"unknown kind", func() error { _, err := tx.Get(Key{Kind: OrderedList + 1}); return err }, "not user state"},
		{"zero key append", func() error { return tx.Append(Key{}, nil) }, "without a state key"},
		{"zero key", func() error { _, err := tx.Get(Key{}); return err }, "without a state key"},
		{"append to keys", func() error { return write(tx, appendReq(mmKeys("m", "k", "w"), []byte("x"))) }, "multimap keys"},
		{"list get without range", func() error { _, err := tx.Get(list("l", "k", "w", nil)); return err }, "without a sort key range"},
		{"list clear without range", func() error { return write(tx, clearReq(list("l", "k", "w", nil))) }, "without a sort key range"},
		{"truncated list entry", func() error { return write(tx, appendReq(list("l", "k", "w", nil), ol(1, 300)[:2])) }, "entry at byte 0"},
		{"no lookup", func() error {
			err := write(s.Begin(nil), appendReq(list("l", "k", "w", nil), ol(1, 1)))
			return err
		}, "no value coders"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.do()
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestCommitOnceAndWritesAfter(t *testing.T) {
	s := NewStore()
	tx := s.Begin(nil)
	mustWrite(t, tx, appendReq(bag("s", "k", "w"), []byte("x")))
	s.Commit(tx)
	s.Commit(tx) // must not apply twice
	if got := show(mustGet(t, s.Begin(nil), bag("s", "k", "w"))); got != "x" {
		t.Fatalf("after double commit got %q", got)
	}
	if err := write(tx, appendReq(bag("s", "k", "w"), []byte("y"))); err == nil {
		t.Fatal("write after commit succeeded")
	}
}

// TestAppendCopiesData pins that the store does not keep the request's
// buffer, which gRPC or a test may reuse.
func TestAppendCopiesData(t *testing.T) {
	s := NewStore()
	tx := s.Begin(varintLookup(t))
	buf := []byte("abc")
	mustWrite(t, tx, appendReq(bag("s", "k", "w"), buf))
	lbuf := ol(1, 2)
	mustWrite(t, tx, appendReq(list("l", "k", "w", nil), lbuf))
	buf[0], lbuf[1] = 'X', 9
	s.Commit(tx)
	r := s.Begin(nil)
	if got := show(mustGet(t, r, bag("s", "k", "w"))); got != "abc" {
		t.Fatalf("bag = %q", got)
	}
	if got := mustGet(t, r, list("l", "k", "w", rng(0, 5))); len(got) != 1 || !bytes.Equal(got[0], ol(1, 2)) {
		t.Fatalf("list = %q", got)
	}
}

func TestScopesAndStats(t *testing.T) {
	s := NewStore()
	tx := s.Begin(varintLookup(t))
	mustWrite(t, tx, appendReq(bag("s", "k2", "w"), []byte("ab")))
	mustWrite(t, tx, appendReq(bag("s", "k1", "w"), []byte("c")))
	mustWrite(t, tx, appendReq(mm("m", "k1", "w", "x"), []byte("d")))
	mustWrite(t, tx, appendReq(list("l", "k1", "w", nil), ol(1, 1, 2, 2)))
	mustWrite(t, tx, clearReq(bag("empty", "k3", "w"))) // must not create state
	s.Commit(tx)
	got := s.Scopes()
	want := []Scope{{tr, "k1", "w"}, {tr, "k2", "w"}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("Scopes = %v, want %v", got, want)
	}
	if st := s.Stats(); st != (Stats{Scopes: 2, Cells: 4, Pieces: 5, Bytes: 2 + 1 + 1 + 4}) {
		t.Fatalf("Stats = %+v", st)
	}
	s.DropWindow(tr, []byte("k1"), []byte("w"))
	s.DropWindow(tr, []byte("k2"), []byte("w"))
	if st := s.Stats(); st != (Stats{}) {
		t.Fatalf("Stats after drop = %+v", st)
	}
}
