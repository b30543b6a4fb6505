package bundleio

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/runner/userstate"
	"github.com/beam-runner/beam-runner/stateplane"
)

// The state plane uses a bundle's user state through these interfaces.
var (
	_ stateplane.Handler = userState{}
	_ stateplane.Writer  = userState{}
	_ stateplane.Handler = (*Sides)(nil)
)

const tr = "t1"

func bag(id, key, win string) *fnpb.StateKey {
	return &fnpb.StateKey{Type: &fnpb.StateKey_BagUserState_{BagUserState: &fnpb.StateKey_BagUserState{
		TransformId: tr, UserStateId: id, Key: []byte(key), Window: []byte(win)}}}
}

func mm(id, key, win, mk string) *fnpb.StateKey {
	return &fnpb.StateKey{Type: &fnpb.StateKey_MultimapUserState_{MultimapUserState: &fnpb.StateKey_MultimapUserState{
		TransformId: tr, UserStateId: id, Key: []byte(key), Window: []byte(win), MapKey: []byte(mk)}}}
}

func mmKeys(id, key, win string) *fnpb.StateKey {
	return &fnpb.StateKey{Type: &fnpb.StateKey_MultimapKeysUserState_{MultimapKeysUserState: &fnpb.StateKey_MultimapKeysUserState{
		TransformId: tr, UserStateId: id, Key: []byte(key), Window: []byte(win)}}}
}

func list(id, key, win string, r *fnpb.OrderedListRange) *fnpb.StateKey {
	return &fnpb.StateKey{Type: &fnpb.StateKey_OrderedListUserState_{OrderedListUserState: &fnpb.StateKey_OrderedListUserState{
		TransformId: tr, UserStateId: id, Key: []byte(key), Window: []byte(win), Range: r}}}
}

func appendReq(k *fnpb.StateKey, data []byte) *fnpb.StateRequest {
	return &fnpb.StateRequest{StateKey: k, Request: &fnpb.StateRequest_Append{Append: &fnpb.StateAppendRequest{Data: data}}}
}

func mustWrite(t testing.TB, u userState, req *fnpb.StateRequest) {
	t.Helper()
	if _, err := u.Write(req); err != nil {
		t.Fatalf("Write: %v", err)
	}
}

func mustGet(t testing.TB, u userState, k *fnpb.StateKey) [][]byte {
	t.Helper()
	ps, err := u.Get(k)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	return ps
}

// varintLookup serves every ordered list with a varint value coder.
func varintLookup(t testing.TB) userstate.Lookup {
	c, err := coders.Compile(map[string]*pipepb.Coder{"c": {Spec: &pipepb.FunctionSpec{Urn: coders.URNVarint}}}, "c")
	if err != nil {
		t.Fatal(err)
	}
	return func(string, string) (*coders.Codec, error) { return c, nil }
}

// TestUserStateRequests checks the Fn API translation: each key kind, the
// responses, and errors that name what is wrong.
func TestUserStateRequests(t *testing.T) {
	s := userstate.NewStore()
	u := userState{s.Begin(varintLookup(t))}
	r, err := u.Write(appendReq(bag("s", "k", "w"), []byte("x")))
	if err != nil || r.GetAppend() == nil {
		t.Fatalf("append response %v, %v", r, err)
	}
	mustWrite(t, u, appendReq(mm("m", "k", "w", "a"), []byte("y")))
	entry := coders.AppendVarint(coders.AppendVarint(nil, 7), 1)
	mustWrite(t, u, appendReq(list("l", "k", "w", nil), entry))
	if got := mustGet(t, u, bag("s", "k", "w")); len(got) != 1 || string(got[0]) != "x" {
		t.Fatalf("bag = %q", got)
	}
	if got := mustGet(t, u, mmKeys("m", "k", "w")); len(got) != 1 || string(got[0]) != "a" {
		t.Fatalf("map keys = %q", got)
	}
	if got := mustGet(t, u, list("l", "k", "w", &fnpb.OrderedListRange{Start: 0, End: 10})); len(got) != 1 || !bytes.Equal(got[0], entry) {
		t.Fatalf("list = %x", got)
	}
	r, err = u.Write(&fnpb.StateRequest{StateKey: bag("s", "k", "w"), Request: &fnpb.StateRequest_Clear{Clear: &fnpb.StateClearRequest{}}})
	if err != nil || r.GetClear() == nil {
		t.Fatalf("clear response %v, %v", r, err)
	}
	side := &fnpb.StateKey{Type: &fnpb.StateKey_IterableSideInput_{IterableSideInput: &fnpb.StateKey_IterableSideInput{}}}
	for _, tc := range []struct {
		name    string
		do      func() error
		wantErr string
	}{
		{"side input key", func() error { _, err := u.Get(side); return err }, "StateKey_IterableSideInput"},
		{"runner key write", func() error {
			_, err := u.Write(appendReq(&fnpb.StateKey{Type: &fnpb.StateKey_Runner_{Runner: &fnpb.StateKey_Runner{}}}, nil))
			return err
		}, "StateKey_Runner"},
		{"nil key", func() error { _, err := u.Get(nil); return err }, "without a state key"},
		{"get via write", func() error {
			_, err := u.Write(&fnpb.StateRequest{StateKey: bag("s", "k", "w"), Request: &fnpb.StateRequest_Get{}})
			return err
		}, "not a write"},
		{"no request", func() error { _, err := u.Write(&fnpb.StateRequest{StateKey: bag("s", "k", "w")}); return err }, "not a write"},
	} {
		if err := tc.do(); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: err = %v, want one containing %q", tc.name, err, tc.wantErr)
		}
	}
}

// TestPagingLargeBag reads a 100k-element bag the way the state plane does:
// Get per request, then Page at the token. Pages must split at element
// boundaries and concatenate to the whole bag, both for committed pieces and
// for a bundle's own appends on top.
func TestPagingLargeBag(t *testing.T) {
	const n = 100_000
	s := userstate.NewStore()
	k := bag("s", "k", "w")
	var want []byte
	tx := userState{s.Begin(nil)}
	for i := 0; i < n; i++ {
		e := []byte(fmt.Sprintf("%0100d", i)) // 100-byte elements: ~10MB
		want = append(want, e...)
		mustWrite(t, tx, appendReq(k, e))
		if i == n/2 {
			s.Commit(tx.txn)
			tx = userState{s.Begin(nil)} // half committed, half pending
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
	s := userstate.NewStore()
	lookup := varintLookup(t)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		key := fmt.Sprint("k", g)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := 0; round < 200; round++ {
				tx := userState{s.Begin(lookup)}
				if got := len(mustGet(t, tx, bag("s", key, "w"))); got != round {
					t.Errorf("%s round %d: bag has %d pieces", key, round, got)
					return
				}
				mustWrite(t, tx, appendReq(bag("s", key, "w"), []byte("x")))
				mustWrite(t, tx, appendReq(mm("m", key, "w", "a"), []byte("y")))
				mustWrite(t, tx, appendReq(list("l", key, "w", nil), coders.AppendVarint(coders.AppendVarint(nil, int64(-round)), 1)))
				mustGet(t, tx, list("l", key, "w", &fnpb.OrderedListRange{Start: -1000, End: 1000}))
				mustGet(t, tx, mmKeys("m", key, "w"))
				s.Commit(tx.txn)
			}
		}()
	}
	wg.Wait()
	if st := s.Stats(); st.Scopes != 4 || st.Pieces != 4*3*200 {
		t.Fatalf("Stats = %+v", st)
	}
}
