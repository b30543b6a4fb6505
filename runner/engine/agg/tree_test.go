package agg

import (
	"encoding/binary"
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"strings"
	"testing"
	"testing/quick"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/runner/coders"
	"github.com/beam-runner/beam-runner/runner/internal/wire"
	"github.com/beam-runner/beam-runner/runner/store"
)

// The tests play the SDK with a fake combine: an accumulator is a
// multiset of input ids (big-endian uint32s, sorted) under a bytes
// coder's length prefix, and merging is multiset union, which is
// associative and commutative, and loses or repeats nothing unnoticed.

func accum(ids ...uint32) []byte {
	slices.Sort(ids)
	var p []byte
	for _, id := range ids {
		p = binary.BigEndian.AppendUint32(p, id)
	}
	return coders.AppendLengthPrefixed(nil, p)
}

func accumIDs(t *testing.T, v []byte) []uint32 {
	t.Helper()
	p, n, err := coders.LengthPrefixed(v)
	if err != nil || n != len(v) || len(p)%4 != 0 {
		t.Fatalf("malformed accumulator %x (%v)", v, err)
	}
	var ids []uint32
	for ; len(p) > 0; p = p[4:] {
		ids = append(ids, binary.BigEndian.Uint32(p))
	}
	return ids
}

func mergeAccums(t *testing.T, vs [][]byte) []byte {
	var ids []uint32
	for _, v := range vs {
		ids = append(ids, accumIDs(t, v)...)
	}
	return accum(ids...)
}

// groupedCodec reads merge input: KV<bytes, iterable<bytes>> in the kind's
// windows, as the runner's wire coder of a lifted combine's grouped
// accumulators would be.
func groupedCodec(t *testing.T, kind coders.WindowKind) *coders.WindowedValueCodec {
	t.Helper()
	win := coders.URNGlobalWindow
	if kind == coders.IntervalWindows {
		win = coders.URNIntervalWindow
	}
	spec := func(urn string, comps ...string) *pipepb.Coder {
		return &pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: urn}, ComponentCoderIds: comps}
	}
	cs := map[string]*pipepb.Coder{
		"b": spec(coders.URNBytes), "it": spec(coders.URNIterable, "b"), "kv": spec(coders.URNKV, "b", "it"),
		"w": spec(win), "wv": spec(coders.URNWindowedValue, "kv", "w"),
	}
	wv, err := coders.CompileWindowedValue(cs, "wv")
	if err != nil {
		t.Fatal(err)
	}
	return wv
}

// fakeMerge is the SDK's merge-accumulators stage: one output per input
// element, at its timestamp and window.
type mergedAccum struct {
	key, win, value []byte
	ts              int64
	n               int // accumulators merged
}

func fakeMerge(t *testing.T, wv *coders.WindowedValueCodec, m Combine) []mergedAccum {
	return fakeMergeWith(t, wv, m, mergeAccums)
}

// fakeMergeWith is fakeMerge with another combine's merge.
func fakeMergeWith(t *testing.T, wv *coders.WindowedValueCodec, m Combine, merge func(*testing.T, [][]byte) []byte) []mergedAccum {
	t.Helper()
	var out []mergedAccum
	eachGroup(t, wv, m, func(key, win []byte, vals [][]byte, ts int64) {
		out = append(out, mergedAccum{key: key, win: win, value: merge(t, vals), ts: ts, n: len(vals)})
	})
	return out
}

// eachGroup parses a merge's input, calling f per partial group.
func eachGroup(t *testing.T, wv *coders.WindowedValueCodec, m Combine, f func(key, win []byte, vals [][]byte, ts int64)) {
	t.Helper()
	err := coders.Each(m.Input, wv, func(v *coders.WindowedValue) error {
		kn, err := wv.Elem.Component(0).Len(v.Elem)
		if err != nil {
			return err
		}
		key, rest := v.Elem[:kn], v.Elem[kn:]
		count, n, err := coders.IterableHeader(rest)
		if err != nil || count < 1 {
			return fmt.Errorf("iterable header %d: %v", count, err)
		}
		rest = rest[n:]
		var vals [][]byte
		for i := int32(0); i < count; i++ {
			vn, err := wv.Elem.Component(1).Component(0).Len(rest)
			if err != nil {
				return err
			}
			vals, rest = append(vals, slices.Clone(rest[:vn])), rest[vn:]
		}
		if len(rest) != 0 || v.NumWindows != 1 {
			return fmt.Errorf("%d bytes after the values, %d windows", len(rest), v.NumWindows)
		}
		win, _, err := wv.NextWindow(v.Windows)
		if err != nil {
			return err
		}
		f(slices.Clone(key), slices.Clone(win), vals, v.Timestamp)
		return nil
	})
	if err != nil {
		t.Fatalf("merge %d: %v", m.ID, err)
	}
}

// treeStats counts what the scenarios exercised, so the test cannot pass
// by merging nothing.
type treeStats struct{ combines, deep, late, restarts, spilled int }

// treeRun drives a GBK with a combiner tree and one without through the
// same input, playing the SDK's merges in an order chosen by r.
type treeRun struct {
	t               *testing.T
	r               *rand.Rand
	wv              *coders.WindowedValueCodec
	tree, ref       *GBK
	chunk           int
	flight          []Combine
	step            int
	err             error // the first hold found too late
	stats           *treeStats
	panes, refPanes []Pane
}

func (x *treeRun) add(key, win []byte, id uint32, ts int64) {
	v := accum(id)
	if err := x.tree.Add(key, win, v, ts, 0); err != nil {
		x.t.Fatal(err)
	}
	if err := x.ref.Add(key, win, v, ts, 0); err != nil {
		x.t.Fatal(err)
	}
}

func (x *treeRun) advance(wm int64) {
	x.tree.AdvanceWatermark(wm)
	x.ref.AdvanceWatermark(wm)
}

// finish plays the SDK for one merge in flight, chosen by r, putting its
// results back in a random order.
func (x *treeRun) finish() {
	i := x.r.Intn(len(x.flight))
	m := x.flight[i]
	x.flight = append(x.flight[:i], x.flight[i+1:]...)
	out := fakeMerge(x.t, x.wv, m)
	x.stats.combines++
	for _, a := range out {
		if len(accumIDs(x.t, a.value)) > 2 {
			x.stats.deep++ // more than a pair: merged results merged again, or wide groups
		}
	}
	if x.tree.wm > coders.MinTimestamp {
		x.stats.late++ // finished after the watermark moved: windows may have waited
	}
	x.r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	for _, a := range out {
		if err := x.tree.AddCombined(a.key, a.win, a.value, a.ts); err != nil {
			x.t.Fatal(err)
		}
	}
	x.tree.FinishCombine(m.ID)
}

// restart snapshots the tree's GBK with its merges in flight given back
// uncombined, and goes on with one restored from it: what a checkpoint and
// a restart after a crash would do.
func (x *treeRun) restart(cfg Config) {
	if x.tree.fast.hasSpilled() {
		return // refused: spilled values live in the store (snapshot.go)
	}
	var back []Uncombined
	for _, m := range x.flight {
		eachGroup(x.t, x.wv, m, func(key, win []byte, vals [][]byte, ts int64) {
			for _, v := range vals {
				back = append(back, Uncombined{Key: key, Window: win, Value: v, TS: ts})
			}
		})
	}
	var w wire.Writer
	if err := x.tree.SnapshotUncombined(&w, back); err != nil {
		x.t.Fatal(err)
	}
	g, err := Restore(cfg, wire.NewReader(w.Bytes()))
	if err != nil {
		x.t.Fatal(err)
	}
	x.tree, x.flight = g, nil
	x.stats.restarts++
}

// settle takes what a step made: merges the policy calls for, and panes.
func (x *treeRun) settle() {
	x.flight = append(x.flight, x.tree.TakeCombines(x.chunk)...)
	x.panes = append(x.panes, x.tree.Fire()...)
	x.refPanes = append(x.refPanes, x.ref.Fire()...)
	// The tree may hold longer (a window waits for its merges), never
	// less: the output watermark must not pass a pane still to come.
	if h, rh := x.tree.Hold(), x.ref.Hold(); h > rh && x.err == nil {
		x.err = fmt.Errorf("step %d: hold %d later than %d without the tree", x.step, h, rh)
	}
	x.step++
}

// paneKey prints a pane with its values merged: what the combine's
// extract would see.
func (x *treeRun) paneKey(p Pane) string {
	win, err := formatWindow(p.Window)
	if err != nil {
		x.t.Fatal(err)
	}
	return fmt.Sprintf("%q %s %s ts=%d %+v %v", p.Key, win, timingNames[p.Info.Timing],
		p.Timestamp, p.Info, accumIDs(x.t, mergeAccums(x.t, p.Values)))
}

func (x *treeRun) check() error {
	got := make([]string, len(x.panes))
	for i, p := range x.panes {
		got[i] = x.paneKey(p)
	}
	want := make([]string, len(x.refPanes))
	for i, p := range x.refPanes {
		want[i] = x.paneKey(p)
	}
	sort.Strings(got)
	sort.Strings(want)
	if g, w := strings.Join(got, "\n"), strings.Join(want, "\n"); g != w {
		return fmt.Errorf("panes differ\ntree:\n%s\nwithout:\n%s", g, w)
	}
	if x.err != nil {
		return x.err
	}
	if !x.tree.Done() || x.tree.CombinesInFlight() != 0 {
		return fmt.Errorf("tree GBK not done: %d merges in flight", x.tree.CombinesInFlight())
	}
	return nil
}

// runTreeScenario plays a random input, with random policy sizes, of few
// keys over windows the watermark passes as it goes (fixed windows) or
// only at the end (the global window), and compares the panes.
func runTreeScenario(t *testing.T, seed int64, stats *treeStats, spill func() Spill) error {
	r := rand.New(rand.NewSource(seed))
	kind := coders.GlobalWindow
	if r.Intn(2) == 1 {
		kind = coders.IntervalWindows
	}
	cfg := goSDK(tDefault(), kind)
	if r.Intn(2) == 1 {
		cfg.OutputTime = pipepb.OutputTime_EARLIEST_IN_PANE
	}
	ref, err := New(cfg)
	if err != nil {
		return err
	}
	cfg.Combine = &CombineTree{PassBytes: 1 + r.Intn(600), BundleBytes: 1 + r.Intn(300)}
	if r.Intn(4) == 0 {
		// Spilled values merge in no pass; they join their pane when it
		// is read back.
		cfg.Spill, cfg.SpillBudget = spill(), r.Intn(8)*60
		stats.spilled++
	}
	tr, err := New(cfg)
	if err != nil || tr.fast == nil || tr.fast.tree == nil {
		return fmt.Errorf("no combiner tree (%v)", err)
	}
	x := &treeRun{t: t, r: r, wv: groupedCodec(t, kind), tree: tr, ref: ref, chunk: 1 + r.Intn(200), stats: stats}
	keys := 1 + r.Intn(6)
	wm, id := int64(0), uint32(0)
	for n := r.Intn(150); n > 0; n-- {
		switch p := r.Intn(100); {
		case p < 65:
			ts := wm + int64(r.Intn(40)) - 5
			win := []byte(nil)
			if kind == coders.IntervalWindows {
				start := ts - ((ts%10)+10)%10
				win = iw(start, start+10)
			}
			key := coders.AppendLengthPrefixed(nil, []byte{byte('a' + r.Intn(keys))})
			x.add(key, win, id, ts)
			id++
		case p < 85 && len(x.flight) > 0:
			x.finish()
		case p < 95 && kind == coders.IntervalWindows:
			wm += int64(r.Intn(15))
			x.advance(wm)
		case p >= 97:
			x.restart(cfg)
		}
		x.settle()
	}
	x.advance(coders.MaxTimestamp)
	x.settle()
	for len(x.flight) > 0 {
		if r.Intn(4) == 0 {
			x.restart(cfg) // windows the watermark passed wait for these merges
		} else {
			x.finish()
		}
		x.settle()
	}
	return x.check()
}

// TestCombineTreeMergeOrder model-checks that a combiner tree gives the
// panes a GroupByKey without one gives: the same accumulators merged, at
// the same timestamps and panes, whatever the policy's sizes, the order
// merges finish in, the order their results come back in, and where
// watermarks move meanwhile, and snapshots restored with merges in flight;
// and that it never holds the watermark less.
func TestCombineTreeMergeOrder(t *testing.T) {
	st, err := store.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	spaces := 0
	spill := func() Spill {
		spaces++
		return st.Space(fmt.Sprintf("t/%d/", spaces))
	}
	var stats treeStats
	err = quick.Check(func(seed int64) bool {
		if err := runTreeScenario(t, seed, &stats, spill); err != nil {
			t.Errorf("seed %d: %v", seed, err)
			return false
		}
		return true
	}, &quick.Config{MaxCount: 2000, Rand: rand.New(rand.NewSource(1))})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Space("t/").Scan(nil, func(k, v []byte) error {
		t.Errorf("spill left key t/%q behind", k)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", stats)
	if stats.combines < 1000 || stats.deep < 1000 || stats.late < 100 || stats.restarts < 100 || stats.spilled < 100 {
		t.Fatalf("the scenarios exercised too little: %+v", stats)
	}
}

// countAccum is a count's accumulator, of constant size as most are.
func countAccum(n uint64) []byte {
	return coders.AppendLengthPrefixed(nil, binary.BigEndian.AppendUint64(nil, n))
}

func sumCounts(t *testing.T, vs [][]byte) []byte {
	var n uint64
	for _, v := range vs {
		p, _, err := coders.LengthPrefixed(v)
		if err != nil || len(p) != 8 {
			t.Fatalf("malformed count %x", v)
		}
		n += binary.BigEndian.Uint64(p)
	}
	return countAccum(n)
}

// TestCombineTreeBoundsMemory feeds one window a long input of few keys,
// the SDK merging each pass at once: the GBK holds about one
// accumulator per key beside the fresh ones the policy waits for, the
// SDK merges at most about twice the input in all, and the pane is
// still every input counted. With the second size a window holds several
// element blocks (elemBlock) before a pass, which must merge them all.
func TestCombineTreeBoundsMemory(t *testing.T) {
	for _, c := range []struct{ inputs, passBytes int }{{200_000, 64 << 10}, {800_000, 16 << 20}} {
		t.Run(fmt.Sprint(c.passBytes), func(t *testing.T) { treeBoundsMemory(t, c.inputs, c.passBytes) })
	}
}

func treeBoundsMemory(t *testing.T, inputs, passBytes int) {
	const keys = 8
	cfg := goSDK(tDefault(), coders.GlobalWindow)
	cfg.Combine = &CombineTree{PassBytes: passBytes, BundleBytes: 16 << 10}
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	wv := groupedCodec(t, coders.GlobalWindow)
	peak, merged := 0, 0
	for i := 0; i < inputs; i++ {
		key := coders.AppendLengthPrefixed(nil, []byte{byte('a' + i%keys)})
		if err := g.Add(key, nil, countAccum(1), 0, 0); err != nil {
			t.Fatal(err)
		}
		peak = max(peak, g.fast.pending)
		for _, m := range g.TakeCombines(1 << 10) {
			for _, a := range fakeMergeWith(t, wv, m, sumCounts) {
				merged += a.n
				if err := g.AddCombined(a.key, a.win, a.value, a.ts); err != nil {
					t.Fatal(err)
				}
			}
			g.FinishCombine(m.ID)
		}
	}
	one := elemBytes([]byte("xa"), countAccum(1))
	if bound := passBytes/one + 2*keys; peak > bound {
		t.Errorf("held up to %d accumulators, want at most %d", peak, bound)
	}
	if merged == 0 || merged > 2*inputs {
		t.Errorf("the SDK merged %d accumulators for %d inputs, want some and at most twice", merged, inputs)
	}
	g.AdvanceWatermark(coders.MaxTimestamp)
	var total uint64
	for _, p := range g.Fire() {
		c, _, _ := coders.LengthPrefixed(sumCounts(t, p.Values))
		total += binary.BigEndian.Uint64(c)
	}
	if total != uint64(inputs) {
		t.Errorf("panes count %d inputs, want %d", total, inputs)
	}
}

func TestTreePolicyDue(t *testing.T) {
	p := newTreePolicy(CombineTree{PassBytes: 100})
	for _, c := range []struct {
		l    treeLoad
		want bool
	}{
		{treeLoad{}, false},
		{treeLoad{fresh: 99}, false},
		{treeLoad{fresh: 100}, true},
		// What the last pass kept must grow by as much again first.
		{treeLoad{fresh: 150, kept: 200}, false},
		{treeLoad{fresh: 200, kept: 200}, true},
	} {
		if got := p.due(c.l); got != c.want {
			t.Errorf("due(%+v) = %v, want %v", c.l, got, c.want)
		}
	}
	if d := newTreePolicy(CombineTree{}); d.passBytes != DefaultPassBytes || d.bundleBytes != DefaultBundleBytes {
		t.Errorf("zero config gives %+v, want the defaults", d)
	}
}
