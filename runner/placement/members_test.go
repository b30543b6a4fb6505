package placement

import (
	"errors"
	"slices"
	"testing"
)

// TestPoolsJoinAndLeave: a host that resolves anew joins the board and
// takes the next new slot; one that no longer resolves is retired, its
// slots drained (an up one runs its bundle to its end) and never chosen
// again, until it resolves again; a lookup that finds nothing changes
// nothing.
func TestPoolsJoinAndLeave(t *testing.T) {
	b := NewBoard([]string{"a:1", "b:1"}, []int{1, 1})
	b.Connected(0)
	b.Connected(1)
	if w, v := b.Acquire(); v != Run || w != 0 {
		t.Fatalf("Acquire = %d, %v", w, v)
	}
	joined, left := b.Membership([]string{"a:1", "b:1", "c:1"})
	if !slices.Equal(joined, []string{"c:1"}) || len(left) != 0 {
		t.Fatalf("c appears: joined %v left %v", joined, left)
	}
	c := b.AddPool("c:1")
	if c != 2 || b.LeastActivePool() != c {
		t.Fatalf("c is pool %d, the least active %d; want 2 for both", c, b.LeastActivePool())
	}
	b.Connected(b.AddSlot(c))

	if joined, left = b.Membership(nil); joined != nil || left != nil {
		t.Fatalf("a lookup that finds nothing: joined %v left %v, want no change", joined, left)
	}
	joined, left = b.Membership([]string{"b:1", "c:1"})
	if len(joined) != 0 || !slices.Equal(left, []int{0}) {
		t.Fatalf("a goes: joined %v left %v", joined, left)
	}
	slots, was := b.Retire(0)
	if !slices.Equal(slots, []int{0}) || !slices.Equal(was, []State{Up}) || b.Drained(0) {
		t.Fatalf("retiring a: slots %v were %v, drained %v; want slot 0, up, still running its bundle", slots, was, b.Drained(0))
	}
	b.Release(0)
	if !b.Drained(0) {
		t.Fatal("a's slot is not drained once its bundle ended")
	}
	for range 4 {
		if w, v := b.Acquire(); v != Run || b.Pool(w) == 0 {
			t.Fatalf("Acquire after a left = %d (pool %d), %v", w, b.Pool(w), v)
		}
		if p := b.LeastActivePool(); p == 0 {
			t.Fatal("a retired pool is chosen for a new worker")
		}
	}
	b.Stopped(0)
	if joined, _ = b.Membership([]string{"a:1", "b:1", "c:1"}); !slices.Equal(joined, []string{"a:1"}) {
		t.Fatalf("a resolves again: joined %v", joined)
	}
	if p := b.AddPool("a:1"); p != 0 || b.Retired(0) || b.LeastActivePool() != 0 {
		t.Fatalf("a back as pool %d (retired %v), least active %d; want 0, serving, chosen", p, b.Retired(0), b.LeastActivePool())
	}
}

// TestReexpandKeepsWhatStillResolves: a refresh that finds what the job
// started with names the same pools; new pods are new pools, gone ones
// are missing; a failed lookup keeps the host's pools.
func TestReexpandKeepsWhatStillResolves(t *testing.T) {
	specs := []Pool{{Addr: "svc:5000", Workers: 2}, {Addr: "one:6000", Workers: 1}, {Addr: "10.0.0.9:7000", Workers: 1}}
	dns := map[string][]string{"svc": {"10.0.0.2", "10.0.0.1"}, "one": {"10.1.0.1"}}
	lookup := func(h string) ([]string, error) {
		if a, ok := dns[h]; ok {
			return a, nil
		}
		return nil, errors.New("no such host")
	}
	start := Expand(specs, lookup)
	names := func(ps []Pool) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Addr)
		}
		return out
	}
	live := names(start)
	if got := names(Reexpand(specs, live, lookup)); !slices.Equal(got, live) {
		t.Fatalf("a refresh finding the same: %v, want %v", got, live)
	}
	dns["svc"] = []string{"10.0.0.1", "10.0.0.3"}
	want := []string{"10.0.0.1:5000", "10.0.0.3:5000", "one:6000", "10.0.0.9:7000"}
	if got := Reexpand(specs, live, lookup); !slices.Equal(names(got), want) || got[1].Workers != 2 {
		t.Fatalf("svc's pods change: %v, want %v with 2 workers each", got, want)
	}
	delete(dns, "svc")
	if got := names(Reexpand(specs, live, lookup)); !slices.Equal(got, live) {
		t.Fatalf("svc's lookup fails: %v, want its pools kept: %v", got, live)
	}
}
