package agg

import (
	"bytes"
	"math/rand"
	"slices"
	"strings"
	"testing"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/runner/store"
)

// TestSpillIsInvisible is metamorphic: random scripts run with no spill
// and with a spill (the real store) at budgets from nothing (every value
// spills) to a few values; panes, holds and their order must not change.
func TestSpillIsInvisible(t *testing.T) {
	st, err := store.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r := rand.New(rand.NewSource(2))
	for i := 0; i < 200; i++ {
		kind := coders.GlobalWindow
		if i%2 == 1 {
			kind = coders.IntervalWindows
		}
		cfg := goSDK(tDefault(), kind)
		if i%3 == 0 {
			cfg.OutputTime = pipepb.OutputTime_EARLIEST_IN_PANE
		}
		lines := randomScript(r, kind)
		want := runScript(t, cfg, lines)
		spilled := cfg
		spilled.Spill = st.Space("t/" + string(rune('a'+i%26)) + "/")
		spilled.SpillBudget = r.Intn(4) * 60
		if got := runScript(t, spilled, lines); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("script %d, budget %d:\n%s\nspilled:\n%s\nin memory:\n%s", i, spilled.SpillBudget,
				strings.Join(lines, "\n"), strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	if err := st.Space("t/").Scan(nil, func(k, v []byte) error {
		t.Errorf("spill left key t/%q behind", k)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestSpillEncodedPanes checks the engine's path (FireEncoded) on a
// GroupByKey with more values than its budget holds: the same bytes as
// in memory.
func TestSpillEncodedPanes(t *testing.T) {
	st, err := store.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	run := func(sp Spill) [][]byte {
		cfg := goSDK(tDefault(), coders.GlobalWindow)
		cfg.Spill, cfg.SpillBudget = sp, 1000
		g, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewSource(3))
		for i := 0; i < 5000; i++ {
			key := []byte{byte(r.Intn(3)), 0, byte(r.Intn(256))} // zero bytes: the escape matters
			if err := g.Add(key, nil, []byte{byte(i), byte(i >> 8)}, int64(i), 0); err != nil {
				t.Fatal(err)
			}
		}
		g.AdvanceWatermark(coders.MaxTimestamp)
		out := g.FireEncoded(1 << 12)
		if err := g.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	want, got := run(nil), run(st.Space("e/"))
	if len(want) == 0 || !slices.EqualFunc(got, want, bytes.Equal) {
		t.Fatalf("spilled panes differ: %d chunks vs %d in memory", len(got), len(want))
	}
}

// TestSpillKeyOrder: escaped keys sort as the raw keys do, whatever their
// bytes, and parse back.
func TestSpillKeyOrder(t *testing.T) {
	r := rand.New(rand.NewSource(4))
	var raw, enc [][]byte
	for i := 0; i < 2000; i++ {
		k := make([]byte, r.Intn(5))
		for j := range k {
			k[j] = []byte{0, 1, 0xff, 'a'}[r.Intn(4)]
		}
		raw = append(raw, k)
		e := appendEscaped(nil, k)
		enc = append(enc, append(e, 0, 0, 0, byte(i%256)))
		back, _, err := parseSpillKey(enc[i])
		if err != nil || !bytes.Equal(back, k) {
			t.Fatalf("parse(%x) = %x, %v; want %x", enc[i], back, err, k)
		}
	}
	idx := make([]int, len(raw))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return bytes.Compare(enc[a][:len(enc[a])-4], enc[b][:len(enc[b])-4]) })
	for i := 1; i < len(idx); i++ {
		if bytes.Compare(raw[idx[i-1]], raw[idx[i]]) > 0 {
			t.Fatalf("escaped order puts %x before %x", raw[idx[i-1]], raw[idx[i]])
		}
	}
	for _, bad := range [][]byte{nil, {0}, {0, 7}, {'a', 0, 1, 0}} {
		if _, _, err := parseSpillKey(bad); err == nil {
			t.Errorf("parseSpillKey(%x) accepted", bad)
		}
	}
}

// TestSpilledWindowHandedOutAsTaken: a spilled window's panes are handed
// out a budget at a time, as an in-memory window's are, going on where
// the last call stopped, whether the spill writes at once or queues its
// writes: the same bytes in the end as all at once in memory.
func TestSpilledWindowHandedOutAsTaken(t *testing.T) {
	st, err := store.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const budget = 2000
	run := func(sp Spill) (all []byte, first int, calls int) {
		cfg := goSDK(tDefault(), coders.GlobalWindow)
		cfg.Spill, cfg.SpillBudget = sp, 1000
		g, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewSource(5))
		for i := 0; i < 5000; i++ {
			key := []byte{byte(r.Intn(7)), 0, byte(r.Intn(256))}
			if err := g.Add(key, nil, []byte{byte(i), byte(i >> 8)}, int64(i), 0); err != nil {
				t.Fatal(err)
			}
		}
		g.AdvanceWatermark(coders.MaxTimestamp)
		for ; g.Due() && calls < 10_000; calls++ {
			n := 0
			g.FireEncodedUpTo(1<<12, budget, func(c []byte) { all, n = append(all, c...), n+len(c) })
			if calls == 0 {
				first = n
			}
		}
		if err := g.Err(); err != nil {
			t.Fatal(err)
		}
		return all, first, calls
	}
	want, _, _ := run(nil)
	for name, sp := range map[string]Spill{"space": st.Space("a/"), "queued": st.Scratch("job").QueuedSpace("b/")} {
		got, first, calls := run(sp)
		if !bytes.Equal(got, want) {
			t.Errorf("%s: the panes handed out differ from those in memory (%d bytes, want %d)", name, len(got), len(want))
		}
		if first > 2*budget || calls < len(want)/(2*budget) {
			t.Errorf("%s: first call handed out %d bytes, %d calls in all; want about %d a call", name, first, calls, budget)
		}
	}
}
