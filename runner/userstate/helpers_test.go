package userstate

import (
	"strings"
	"testing"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"

	"github.com/beam-runner/beam-runner/runner/coders"
)

const tr = "t1"

func bag(id, key, win string) Key {
	return Key{Kind: Bag, Transform: tr, StateID: id, Key: []byte(key), Window: []byte(win)}
}

func mm(id, key, win, mk string) Key {
	return Key{Kind: Multimap, Transform: tr, StateID: id, Key: []byte(key), Window: []byte(win), MapKey: []byte(mk)}
}

func mmKeys(id, key, win string) Key {
	return Key{Kind: MultimapKeys, Transform: tr, StateID: id, Key: []byte(key), Window: []byte(win)}
}

// list is an ordered-list key; a nil range leaves the range unset, as
// appends do.
func list(id, key, win string, r *Range) Key {
	return Key{Kind: OrderedList, Transform: tr, StateID: id, Key: []byte(key), Window: []byte(win), Range: r}
}

func rng(start, end int64) *Range { return &Range{Start: start, End: end} }

// req is a write: an append of data, or a clear.
type req struct {
	key   Key
	data  []byte
	clear bool
}

func appendReq(k Key, data []byte) req { return req{key: k, data: data} }

func clearReq(k Key) req { return req{key: k, clear: true} }

func write(tx *Txn, r req) error {
	if r.clear {
		return tx.Clear(r.key)
	}
	return tx.Append(r.key, r.data)
}

// olEntry encodes an ordered-list entry the Go SDK way, with a varint value.
func olEntry(sortKey, v int64) []byte {
	return coders.AppendVarint(coders.AppendVarint(nil, sortKey), v)
}

// ol concatenates entries, as one Append may carry several.
func ol(kvs ...int64) []byte {
	var b []byte
	for i := 0; i+1 < len(kvs); i += 2 {
		b = append(b, olEntry(kvs[i], kvs[i+1])...)
	}
	return b
}

func compile(t testing.TB, urn string) *coders.Codec {
	t.Helper()
	c, err := coders.Compile(map[string]*pipepb.Coder{"c": {Spec: &pipepb.FunctionSpec{Urn: urn}}}, "c")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// varintLookup serves every ordered list with a varint value coder.
func varintLookup(t testing.TB) Lookup {
	c := compile(t, coders.URNVarint)
	return func(string, string) (*coders.Codec, error) { return c, nil }
}

func mustWrite(t testing.TB, tx *Txn, r req) {
	t.Helper()
	if err := write(tx, r); err != nil {
		t.Fatalf("Write: %v", err)
	}
}

func mustGet(t testing.TB, tx *Txn, k Key) [][]byte {
	t.Helper()
	ps, err := tx.Get(k)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	return ps
}

// show renders pieces as "a|b|c" for readable table expectations.
func show(ps [][]byte) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = string(p)
	}
	return strings.Join(s, "|")
}
